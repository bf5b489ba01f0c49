// Command receiver is a receiver for appstore-gateway's signed webhooks, standard library only.
//
//	go run . -port 8080 -secret-file team.secret
//	go run . -port 8080 -secret-file new.secret -secret-file old.secret
//
// It verifies appstore-gateway-signature (400 when malformed, 401 when no signature matches or t is outside
// the replay window), handles each event once (dedupe on the signed eventId, in memory), ignores an event
// whose sequence is not greater than the last one handled for its subscription, and only then answers 204.
// Each handled event prints one line: `<eventId> <originalTransactionId> #<sequence> <type>`.
package main

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

const (
	signatureHeader  = "appstore-gateway-signature"
	eventIDHeader    = "appstore-gateway-event-id"
	defaultTolerance = 300 * time.Second // between the signature's t and this receiver's clock
	maxBody          = 1 << 20
	rememberedIDs    = 10000
)

// ErrMalformed: the header cannot be read (answer 400). ErrInvalid: it is well formed but no v1 matches, or
// t is outside the window (answer 401). Verify wraps one of them.
var (
	ErrMalformed = errors.New("malformed signature")
	ErrInvalid   = errors.New("bad signature")
)

// Sign is the lowercase hex HMAC-SHA256 of "<t>.<body>", as the gateway computes it.
func Sign(secret []byte, t int64, body []byte) string {
	mac := hmac.New(sha256.New, secret)
	fmt.Fprintf(mac, "%d.", t)
	mac.Write(body)
	return hex.EncodeToString(mac.Sum(nil))
}

// Verify checks header ("t=<unix seconds>,v1=<hex>[,v1=<hex>...]") against the raw body bytes: good when any
// v1 matches any secret. It returns t. Unknown keys (a future v2=) are ignored.
func Verify(header string, body []byte, secrets [][]byte, now time.Time, tolerance time.Duration) (int64, error) {
	var timestamps, candidates []string
	for _, part := range strings.Split(header, ",") {
		key, value, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return 0, fmt.Errorf("%w: not key=value: %q", ErrMalformed, part)
		}
		switch key {
		case "t":
			timestamps = append(timestamps, value)
		case "v1":
			candidates = append(candidates, value)
		}
	}
	if len(timestamps) != 1 || !isDigits(timestamps[0], 18) {
		return 0, fmt.Errorf("%w: expected exactly one t of decimal digits", ErrMalformed)
	}
	if len(candidates) == 0 {
		return 0, fmt.Errorf("%w: no v1", ErrMalformed)
	}
	for _, c := range candidates {
		if len(c) != 64 || strings.Trim(c, "0123456789abcdef") != "" {
			return 0, fmt.Errorf("%w: expected v1 values of 64 lowercase hex digits", ErrMalformed)
		}
	}
	t, _ := strconv.ParseInt(timestamps[0], 10, 64) // at most 18 digits: cannot overflow
	if age := now.Sub(time.Unix(t, 0)); age > tolerance || age < -tolerance {
		return 0, fmt.Errorf("%w: t is %d s away from this clock (window %d s)", ErrInvalid,
			int64(age/time.Second), int64(tolerance/time.Second))
	}
	matched := 0
	for _, secret := range secrets {
		expected := []byte(Sign(secret, t, body))
		for _, c := range candidates {
			// Constant time, and no early exit: timing tells nothing about which prefix matched.
			matched |= subtle.ConstantTimeCompare(expected, []byte(c))
		}
	}
	if matched == 0 {
		return 0, fmt.Errorf("%w: no v1 matches a configured secret", ErrInvalid)
	}
	return t, nil
}

// isDigits: 1 to max ASCII decimal digits (t and sequence; 18 fit an int64 everywhere).
func isDigits(s string, max int) bool {
	return len(s) >= 1 && len(s) <= max && strings.Trim(s, "0123456789") == ""
}

// readSecret: the file's bytes with surrounding whitespace (a trailing newline) trimmed, as the gateway reads it.
func readSecret(path string) []byte {
	data, err := os.ReadFile(path)
	if err != nil {
		log.Fatal(err)
	}
	secret := bytes.Trim(data, " \t\r\n\v\f")
	if len(secret) == 0 {
		log.Fatalf("%s: empty secret", path)
	}
	return secret
}

// Event holds the fields of a SubscriptionEvent (proto3 JSON) this receiver uses; a real one decodes more
// (subscription.entitled, subscription.entitlements...).
type Event struct {
	EventID               string `json:"eventId"`
	OriginalTransactionID string `json:"originalTransactionId"`
	// uint64 is a JSON string in proto3 JSON ("3"); json.Number takes that and a plain number alike.
	Sequence json.Number `json:"sequence"`
	Type     string      `json:"type"`
}

// parseEvent returns the event and its sequence, or an error when it lacks what dedupe and ordering need.
func parseEvent(body []byte) (Event, uint64, error) {
	var e Event
	if err := json.Unmarshal(body, &e); err != nil {
		return e, 0, err
	}
	if e.EventID == "" || e.OriginalTransactionID == "" || !isDigits(string(e.Sequence), 18) {
		return e, 0, errors.New("eventId, originalTransactionId and sequence are required")
	}
	sequence, _ := strconv.ParseUint(string(e.Sequence), 10, 64)
	if sequence < 1 {
		return e, 0, errors.New("sequence starts at 1")
	}
	if e.Type == "" {
		// proto3 JSON omits fields that hold their default value, enums included.
		e.Type = "SUBSCRIPTION_EVENT_TYPE_UNSPECIFIED"
	}
	return e, sequence, nil
}

// Events is what this receiver has handled. In memory, so it is forgotten on restart: a real receiver keeps it
// next to the data the events change (same database transaction), so a retry after a crash is still recognised.
type Events struct {
	mu           sync.Mutex
	seen         map[string]bool
	order        []string // seen ids, oldest first, to forget the oldest past rememberedIDs
	lastSequence map[string]uint64
}

// Receive handles e unless it was seen or is older than what was handled, and says which.
func (s *Events) Receive(e Event, sequence uint64) (string, error) {
	// One lock around check, handling and recording: two deliveries of one event racing each other (a retry
	// after a timeout) cannot both be handled.
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seen[e.EventID] {
		return "duplicate", nil
	}
	if sequence <= s.lastSequence[e.OriginalTransactionID] {
		return "stale", nil
	}
	if err := handle(e); err != nil {
		return "", err // nothing recorded: the gateway retries
	}
	s.seen[e.EventID] = true
	s.order = append(s.order, e.EventID)
	if len(s.order) > rememberedIDs {
		delete(s.seen, s.order[0])
		s.order = s.order[1:]
	}
	s.lastSequence[e.OriginalTransactionID] = sequence
	return "handled", nil
}

// handle is where the team's own logic goes (grant or revoke access...). This example prints the event.
func handle(e Event) error {
	_, err := fmt.Printf("%s %s #%s %s\n", e.EventID, e.OriginalTransactionID, e.Sequence, e.Type)
	return err
}

type receiver struct {
	secrets   [][]byte
	tolerance time.Duration
	events    *Events
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		reply(w, r, http.StatusMethodNotAllowed, "POST only")
		return
	}
	// The exact bytes that were signed: never re-serialise before verifying.
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		reply(w, r, http.StatusRequestEntityTooLarge, "body too large or unreadable")
		return
	}
	headers := r.Header.Values(signatureHeader)
	if len(headers) != 1 {
		reply(w, r, http.StatusBadRequest, fmt.Sprintf("malformed signature: expected one %s header, got %d",
			signatureHeader, len(headers)))
		return
	}
	if _, err := Verify(headers[0], body, rc.secrets, time.Now(), rc.tolerance); err != nil {
		status := http.StatusUnauthorized
		if errors.Is(err, ErrMalformed) {
			status = http.StatusBadRequest
		}
		reply(w, r, status, err.Error())
		return
	}
	// Only now is the body trusted. Dedupe uses the signed eventId, not the (unsigned) event-id header.
	e, sequence, err := parseEvent(body)
	if err != nil {
		reply(w, r, http.StatusBadRequest, "not a subscription event: "+err.Error())
		return
	}
	outcome, err := rc.events.Receive(e, sequence)
	if err != nil {
		reply(w, r, http.StatusInternalServerError, "handling failed: "+err.Error())
		return
	}
	if outcome != "handled" {
		log.Printf("%s: %s %s #%d", outcome, e.EventID, e.OriginalTransactionID, sequence)
	}
	w.WriteHeader(http.StatusNoContent)
}

// reply answers an error with a one-line text body and logs it to stderr.
func reply(w http.ResponseWriter, r *http.Request, status int, message string) {
	eventID := r.Header.Get(eventIDHeader)
	if eventID == "" {
		eventID = "-"
	}
	log.Printf("%d %s (event %s)", status, message, eventID)
	http.Error(w, message, status)
}

type secretFiles []string

func (s *secretFiles) String() string     { return strings.Join(*s, ",") }
func (s *secretFiles) Set(v string) error { *s = append(*s, v); return nil }

func main() {
	port := flag.Int("port", 8080, "port to listen on (0 picks a free one)")
	host := flag.String("host", "127.0.0.1", "address to listen on (0.0.0.0 for all)")
	tolerance := flag.Int("tolerance", int(defaultTolerance/time.Second), "replay window in seconds")
	var files secretFiles
	flag.Var(&files, "secret-file", "the team's secret; repeat during a rotation (old and new)")
	flag.Parse()
	if len(files) == 0 {
		log.Fatal("at least one -secret-file is required")
	}
	rc := &receiver{
		tolerance: time.Duration(*tolerance) * time.Second,
		events:    &Events{seen: map[string]bool{}, lastSequence: map[string]uint64{}},
	}
	for _, path := range files {
		rc.secrets = append(rc.secrets, readSecret(path))
	}
	listener, err := net.Listen("tcp", net.JoinHostPort(*host, strconv.Itoa(*port)))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("listening on %s:%d\n", *host, listener.Addr().(*net.TCPAddr).Port)
	server := &http.Server{Handler: rc, ReadHeaderTimeout: 10 * time.Second}
	log.Fatal(server.Serve(listener))
}
