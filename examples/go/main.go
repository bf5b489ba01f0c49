// Command client calls appstore-gateway with stock grpc-go stubs generated from proto/ (see README.md).
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	gatewayv1 "example.com/appstore-gateway/gen/go/appstore/gateway/v1"
)

const gatewayService = "appstore.gateway.v1.AppStoreGateway"

func main() {
	target := flag.String("target", "localhost:50051", "gateway address (h2c), or dns:///host:port")
	roundRobin := flag.Bool("round-robin", false, "balance calls over every address the target resolves to")
	timeout := flag.Duration("timeout", 30*time.Second, "deadline per call")
	app := flag.String("app", "", "configured app name or bundle id")
	jwsFile := flag.String("jws-file", "", "VerifyJWS: a file holding a compact JWS")
	transactionID := flag.String("transaction-id", "", "GetHistory: any transaction id of the customer")
	allPages := flag.Bool("all-pages", false, "GetHistory: follow revisions until has_more is false")
	start := flag.String("start", "", "StreamNotifications: RFC 3339 start")
	end := flag.String("end", "", "StreamNotifications: RFC 3339 end")
	tokenFile := flag.String("token-file", "", "send its content as `authorization: Bearer` on every call (re-read per call)")
	caFile := flag.String("ca-file", "", "connect over TLS, trusting this PEM CA")
	certFile := flag.String("cert-file", "", "with -ca-file: a PEM client certificate (mutual TLS)")
	keyFile := flag.String("key-file", "", "with -ca-file: the client certificate's PEM key")
	flag.Parse()

	// grpc.WithInsecure: h2c inside the cluster. (Newer grpc-go spells it
	// grpc.WithTransportCredentials(insecure.NewCredentials()); Debian's grpc-go 1.33 has only this form.)
	options := []grpc.DialOption{grpc.WithInsecure()}
	if *caFile != "" {
		options = []grpc.DialOption{grpc.WithTransportCredentials(tlsCredentials(*caFile, *certFile, *keyFile))}
	}
	if *tokenFile != "" {
		options = append(options, grpc.WithPerRPCCredentials(bearerToken{path: *tokenFile, tls: *caFile != ""}))
	}
	if *roundRobin {
		options = append(options, grpc.WithDefaultServiceConfig(`{"loadBalancingConfig":[{"round_robin":{}}]}`))
	}
	conn, err := grpc.Dial(*target, options...)
	if err != nil {
		log.Fatalf("cannot create a client for %s: %v", *target, err)
	}
	defer conn.Close()

	ok := checkHealth(conn, *timeout)
	client := gatewayv1.NewAppStoreGatewayClient(conn)
	if *jwsFile != "" {
		ok = verify(client, *timeout, *app, *jwsFile) && ok
	}
	if *transactionID != "" {
		ok = history(client, *timeout, *app, *transactionID, *allPages) && ok
	}
	if *start != "" && *end != "" {
		ok = notifications(client, *timeout, *app, *start, *end) && ok
	}
	if !ok {
		os.Exit(2)
	}
}

// bearerToken sends a projected service-account token (or any JWT file) as `authorization: Bearer`, reading
// the file on every call: the kubelet rewrites it before it expires.
type bearerToken struct {
	path string
	tls  bool
}

func (b bearerToken) GetRequestMetadata(ctx context.Context, uri ...string) (map[string]string, error) {
	token, err := os.ReadFile(b.path)
	if err != nil {
		return nil, err
	}
	return map[string]string{"authorization": "Bearer " + strings.TrimSpace(string(token))}, nil
}

// RequireTransportSecurity: without -ca-file the token travels over h2c, which is only acceptable where a
// mesh encrypts the pod-to-pod traffic.
func (b bearerToken) RequireTransportSecurity() bool { return b.tls }

func tlsCredentials(caFile, certFile, keyFile string) credentials.TransportCredentials {
	ca, err := os.ReadFile(caFile)
	if err != nil {
		log.Fatalf("cannot read %s: %v", caFile, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		log.Fatalf("%s holds no PEM certificate", caFile)
	}
	config := &tls.Config{RootCAs: pool, NextProtos: []string{"h2"}}
	if certFile != "" {
		pair, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			log.Fatalf("cannot load the client certificate: %v", err)
		}
		config.Certificates = []tls.Certificate{pair}
	}
	return credentials.NewTLS(config)
}

func checkHealth(conn *grpc.ClientConn, timeout time.Duration) bool {
	ok := true
	for _, service := range []string{"", gatewayService} {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		reply, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: service})
		cancel()
		if err != nil {
			printError(fmt.Sprintf("health %q", service), err)
			ok = false
			continue
		}
		fmt.Printf("health %q: %s\n", service, reply.GetStatus())
	}
	return ok
}

func verify(client gatewayv1.AppStoreGatewayClient, timeout time.Duration, app, path string) bool {
	jws, err := os.ReadFile(path)
	if err != nil {
		log.Fatalf("cannot read %s: %v", path, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	// Bound to the app: the gateway refuses an unbound call unless it has exactly one app configured (or
	// verification.allowUnboundVerification); with no Environment the app's configured environment decides.
	reply, err := client.VerifyJWS(ctx, &gatewayv1.VerifyJWSRequest{Jws: strings.TrimSpace(string(jws)), App: app})
	if err != nil {
		printError("VerifyJWS", err)
		return false
	}
	fmt.Printf("VerifyJWS: status=%s kind=%s environment=%s message=%q\n", reply.GetStatus(), reply.GetKind(),
		reply.GetEnvironment(), reply.GetMessage())
	if reply.GetStatus() != gatewayv1.VerificationStatus_VERIFICATION_STATUS_OK {
		fmt.Println("  (do not trust this payload)")
	} else if t := reply.GetTransaction(); t != nil {
		fmt.Printf("  transaction %s %s\n", t.GetTransactionId(), t.GetProductId())
	}
	return true
}

func history(client gatewayv1.AppStoreGatewayClient, timeout time.Duration, app, transactionID string, allPages bool) bool {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	reply, err := client.GetHistory(ctx, &gatewayv1.GetHistoryRequest{App: app, TransactionId: transactionID, AllPages: allPages})
	if err != nil {
		printError("GetHistory", err)
		return false
	}
	fmt.Printf("GetHistory: bundle_id=%s transactions=%d pages=%d has_more=%t\n",
		reply.GetBundleId(), len(reply.GetSignedTransactions()), reply.GetPagesFetched(), reply.GetHasMore())
	for _, t := range reply.GetTransactions() {
		fmt.Printf("  %s %s\n", t.GetTransactionId(), t.GetProductId())
	}
	return true
}

func notifications(client gatewayv1.AppStoreGatewayClient, timeout time.Duration, app, start, end string) bool {
	from, err1 := time.Parse(time.RFC3339, start)
	to, err2 := time.Parse(time.RFC3339, end)
	// Go 1.19 (Debian bookworm) has no errors.Join.
	for _, err := range []error{err1, err2} {
		if err != nil {
			log.Fatalf("bad -start/-end: %v", err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	stream, err := client.StreamNotifications(ctx, &gatewayv1.StreamNotificationsRequest{
		App: app, StartDate: timestamppb.New(from), EndDate: timestamppb.New(to)})
	if err != nil {
		printError("StreamNotifications", err)
		return false
	}
	count, resume := 0, ""
	for {
		event, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			printError("StreamNotifications", err)
			if resume != "" {
				fmt.Printf("  resume with resume_token %s\n", resume)
			}
			return false
		}
		count++
		resume = event.GetResumeToken()
		n := event.GetNotification()
		fmt.Printf("  %s %s/%s\n", n.GetNotificationUuid(), n.GetNotificationTypeRaw(), n.GetSubtypeRaw())
	}
	fmt.Printf("StreamNotifications: %d events\n", count)
	return true
}

// printError prints the gRPC status and the rich error details the gateway attaches.
func printError(method string, err error) {
	st := status.Convert(err)
	fmt.Printf("%s: RPC error %s: %s\n", method, st.Code(), st.Message())
	for _, detail := range st.Details() {
		switch d := detail.(type) {
		case *errdetails.ErrorInfo:
			fmt.Printf("  ErrorInfo: reason=%s domain=%s metadata=%v\n", d.GetReason(), d.GetDomain(), d.GetMetadata())
		case *errdetails.RetryInfo:
			fmt.Printf("  RetryInfo: retry after %s\n", d.GetRetryDelay().AsDuration())
		}
	}
}
