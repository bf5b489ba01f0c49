// A receiver for appstore-gateway's signed webhooks, JDK only (Java 11 or later), one file:
//
//   java Receiver.java --port 8080 --secret-file team.secret
//   java Receiver.java --port 8080 --secret-file new.secret --secret-file old.secret
//
// It verifies appstore-gateway-signature (400 when malformed, 401 when no signature matches or t is outside the
// replay window), handles each event once (dedupe on the signed eventId, in memory), ignores an event whose
// sequence is not greater than the last one handled for its subscription, and only then answers 204. Each handled
// event prints one line: `<eventId> <originalTransactionId> #<sequence> <type>`.

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

public class Receiver {
    static final String SIGNATURE_HEADER = "appstore-gateway-signature";
    static final String EVENT_ID_HEADER = "appstore-gateway-event-id";
    static final long DEFAULT_TOLERANCE = 300; // seconds between the signature's t and this receiver's clock
    static final int MAX_BODY = 1 << 20;
    static final int REMEMBERED_IDS = 10_000;
    static final Pattern HEX64 = Pattern.compile("[0-9a-f]{64}");
    // t and sequence: plain decimal, small enough for a long.
    static final Pattern DIGITS = Pattern.compile("[0-9]{1,18}");

    /** The header cannot be read (answer 400). */
    static final class MalformedSignature extends Exception {
        MalformedSignature(String message) { super(message); }
    }

    /** The header is well formed but no v1 matches, or t is outside the window (answer 401). */
    static final class InvalidSignature extends Exception {
        InvalidSignature(String message) { super(message); }
    }

    /** Lowercase hex HMAC-SHA256 of "<t>.<body>", as the gateway computes it. */
    static String sign(byte[] secret, long t, byte[] body) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(secret, "HmacSHA256"));
            mac.update((t + ".").getBytes(StandardCharsets.US_ASCII));
            StringBuilder hex = new StringBuilder();
            for (byte b : mac.doFinal(body)) {
                hex.append(Character.forDigit((b >> 4) & 0xf, 16)).append(Character.forDigit(b & 0xf, 16));
            }
            return hex.toString();
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(e); // every JDK has HmacSHA256
        }
    }

    /**
     * Checks header ("t=<unix seconds>,v1=<hex>[,v1=<hex>...]") against the raw body bytes: good when any v1 matches
     * any secret. Returns t. Unknown keys (a future v2=) are ignored. {@code now} is in unix seconds.
     */
    static long verify(String header, byte[] body, List<byte[]> secrets, long now, long tolerance)
            throws MalformedSignature, InvalidSignature {
        List<String> timestamps = new ArrayList<>();
        List<String> candidates = new ArrayList<>();
        for (String part : (header == null ? "" : header).split(",", -1)) {
            String[] keyValue = part.strip().split("=", 2);
            if (keyValue.length != 2) throw new MalformedSignature("not key=value: '" + part.strip() + "'");
            if (keyValue[0].equals("t")) timestamps.add(keyValue[1]);
            else if (keyValue[0].equals("v1")) candidates.add(keyValue[1]);
        }
        if (timestamps.size() != 1 || !DIGITS.matcher(timestamps.get(0)).matches()) {
            throw new MalformedSignature("expected exactly one t of decimal digits");
        }
        if (candidates.isEmpty() || !candidates.stream().allMatch(c -> HEX64.matcher(c).matches())) {
            throw new MalformedSignature("expected v1 values of 64 lowercase hex digits");
        }
        long t = Long.parseLong(timestamps.get(0));
        if (Math.abs(now - t) > tolerance) {
            throw new InvalidSignature("t is " + (now - t) + " s away from this clock (window " + tolerance + " s)");
        }
        boolean matched = false;
        for (byte[] secret : secrets) {
            byte[] expected = sign(secret, t, body).getBytes(StandardCharsets.US_ASCII);
            for (String candidate : candidates) {
                // Constant time, and no early exit: timing tells nothing about which prefix matched.
                matched |= MessageDigest.isEqual(expected, candidate.getBytes(StandardCharsets.US_ASCII));
            }
        }
        if (!matched) throw new InvalidSignature("no v1 matches a configured secret");
        return t;
    }

    /** The file's bytes with surrounding whitespace (a trailing newline) trimmed, as the gateway reads it. */
    static byte[] readSecret(String path) throws IOException {
        byte[] data = Files.readAllBytes(Path.of(path));
        int start = 0, end = data.length;
        while (start < end && isSpace(data[start])) start++;
        while (end > start && isSpace(data[end - 1])) end--;
        if (start == end) throw new IllegalArgumentException(path + ": empty secret");
        return java.util.Arrays.copyOfRange(data, start, end);
    }

    static boolean isSpace(byte b) {
        return b == ' ' || b == '\t' || b == '\n' || b == '\r' || b == 0x0b || b == '\f';
    }

    /** The fields of a SubscriptionEvent (proto3 JSON) this receiver uses; a real one reads more. */
    static final class Event {
        final String eventId;
        final String originalTransactionId;
        final long sequence;
        final String type;

        Event(String eventId, String originalTransactionId, long sequence, String type) {
            this.eventId = eventId;
            this.originalTransactionId = originalTransactionId;
            this.sequence = sequence;
            this.type = type;
        }

        /** The event, or null when the body lacks what dedupe and ordering need. */
        static Event parse(byte[] body) {
            Object json;
            try {
                json = Json.parse(new String(body, StandardCharsets.UTF_8));
            } catch (IllegalArgumentException e) {
                return null;
            }
            if (!(json instanceof Map)) return null;
            Map<?, ?> m = (Map<?, ?>) json;
            String eventId = nonEmptyString(m.get("eventId"));
            String subscription = nonEmptyString(m.get("originalTransactionId"));
            // uint64 is a JSON string in proto3 JSON ("3"); a plain number is accepted too, as proto3 parsers do.
            Object sequence = m.get("sequence");
            String digits = sequence instanceof String || sequence instanceof Number ? sequence.toString() : "";
            if (eventId == null || subscription == null || !DIGITS.matcher(digits).matches()
                    || Long.parseLong(digits) < 1) {
                return null;
            }
            // proto3 JSON omits fields that hold their default value, enums included.
            String type = nonEmptyString(m.get("type"));
            return new Event(eventId, subscription, Long.parseLong(digits),
                    type == null ? "SUBSCRIPTION_EVENT_TYPE_UNSPECIFIED" : type);
        }

        static String nonEmptyString(Object value) {
            return value instanceof String && !((String) value).isEmpty() ? (String) value : null;
        }
    }

    /**
     * What this receiver has handled. In memory, so it is forgotten on restart: a real receiver keeps it next to the
     * data the events change (same database transaction), so that a retry after a crash is still recognised.
     */
    static final class Events {
        // Recent event ids, the oldest dropped past REMEMBERED_IDS.
        private final Map<String, Boolean> ids = new LinkedHashMap<>() {
            @Override
            protected boolean removeEldestEntry(Map.Entry<String, Boolean> eldest) {
                return size() > REMEMBERED_IDS;
            }
        };
        private final Map<String, Long> lastSequence = new HashMap<>();

        /**
         * Handles the event unless it was seen or is older than what was handled, and says which. Synchronized around
         * check, handling and recording: two deliveries of one event racing each other cannot both be handled.
         */
        synchronized String receive(Event event) {
            if (ids.containsKey(event.eventId)) return "duplicate";
            if (event.sequence <= lastSequence.getOrDefault(event.originalTransactionId, 0L)) return "stale";
            handle(event); // an exception here answers 500: nothing is recorded, and the gateway retries
            ids.put(event.eventId, true);
            lastSequence.put(event.originalTransactionId, event.sequence);
            return "handled";
        }
    }

    /** The team's own logic goes here (grant or revoke access...). This example prints the event. */
    static void handle(Event e) {
        System.out.println(e.eventId + " " + e.originalTransactionId + " #" + e.sequence + " " + e.type);
        System.out.flush();
    }

    private final List<byte[]> secrets;
    private final long tolerance;
    private final Events events = new Events();

    Receiver(List<byte[]> secrets, long tolerance) {
        this.secrets = secrets;
        this.tolerance = tolerance;
    }

    void serve(HttpExchange exchange) throws IOException {
        try {
            if (!exchange.getRequestMethod().equals("POST")) {
                reply(exchange, 405, "POST only");
                return;
            }
            // The exact bytes that were signed: never re-serialise before verifying.
            byte[] body = exchange.getRequestBody().readNBytes(MAX_BODY + 1);
            if (body.length > MAX_BODY) {
                reply(exchange, 413, "body too large");
                return;
            }
            List<String> headers = exchange.getRequestHeaders().get(SIGNATURE_HEADER); // case-insensitive lookup
            try {
                if (headers == null || headers.size() != 1) {
                    throw new MalformedSignature("expected one " + SIGNATURE_HEADER + " header");
                }
                verify(headers.get(0), body, secrets, Instant.now().getEpochSecond(), tolerance);
            } catch (MalformedSignature e) {
                reply(exchange, 400, "malformed signature: " + e.getMessage());
                return;
            } catch (InvalidSignature e) {
                reply(exchange, 401, "bad signature: " + e.getMessage());
                return;
            }
            // Only now is the body trusted. Dedupe uses the signed eventId, not the (unsigned) event-id header.
            Event event = Event.parse(body);
            if (event == null) {
                reply(exchange, 400, "not a subscription event");
                return;
            }
            String outcome;
            try {
                outcome = events.receive(event);
            } catch (RuntimeException e) {
                reply(exchange, 500, "handling failed: " + e);
                return;
            }
            if (!outcome.equals("handled")) {
                System.err.println(outcome + ": " + event.eventId + " " + event.originalTransactionId + " #"
                        + event.sequence);
            }
            exchange.sendResponseHeaders(204, -1);
        } finally {
            exchange.close();
        }
    }

    /** Answers an error with a one-line text body and logs it to stderr. */
    static void reply(HttpExchange exchange, int status, String message) throws IOException {
        String eventId = exchange.getRequestHeaders().getFirst(EVENT_ID_HEADER);
        System.err.println(status + " " + message + " (event " + (eventId == null ? "-" : eventId) + ")");
        byte[] data = (message + "\n").getBytes(StandardCharsets.UTF_8);
        exchange.getResponseHeaders().set("Content-Type", "text/plain; charset=utf-8");
        exchange.sendResponseHeaders(status, data.length);
        try (OutputStream out = exchange.getResponseBody()) {
            out.write(data);
        }
    }

    public static void main(String[] args) throws IOException {
        int port = 8080;
        String host = "127.0.0.1";
        long tolerance = DEFAULT_TOLERANCE;
        List<byte[]> secrets = new ArrayList<>();
        for (int i = 0; i < args.length; i++) {
            // --name value or --name=value
            String[] option = args[i].split("=", 2);
            String value = option.length == 2 ? option[1] : (i + 1 < args.length ? args[++i] : null);
            if (value == null) usage("missing value for " + option[0]);
            switch (option[0]) {
                case "--port": port = Integer.parseInt(value); break; // 0 picks a free port
                case "--host": host = value; break; // 0.0.0.0 for all addresses
                case "--tolerance": tolerance = Long.parseLong(value); break; // replay window in seconds
                case "--secret-file": secrets.add(readSecret(value)); break; // repeat during a rotation
                default: usage("unknown option " + option[0]);
            }
        }
        if (secrets.isEmpty()) usage("at least one --secret-file is required");
        HttpServer server = HttpServer.create(new InetSocketAddress(host, port), 0);
        server.createContext("/", new Receiver(secrets, tolerance)::serve);
        server.setExecutor(Executors.newFixedThreadPool(4));
        server.start();
        System.out.println("listening on " + host + ":" + server.getAddress().getPort());
    }

    static void usage(String problem) {
        System.err.println(problem + "\nusage: java Receiver.java [--port 8080] [--host 127.0.0.1] [--tolerance 300]"
                + " --secret-file PATH [--secret-file PATH]");
        System.exit(1);
    }

    /** A minimal JSON reader (the JDK has none): objects, arrays, strings, numbers, true, false and null. */
    static final class Json {
        private static final Pattern NUMBER = Pattern.compile("-?(0|[1-9][0-9]*)(\\.[0-9]+)?([eE][+-]?[0-9]+)?");
        private static final Pattern HEX4 = Pattern.compile("[0-9a-fA-F]{4}");
        private final String text;
        private int at;

        private Json(String text) { this.text = text; }

        /** Maps, lists, strings, BigDecimals, Booleans and nulls; IllegalArgumentException when not JSON. */
        static Object parse(String text) {
            Json json = new Json(text);
            Object value = json.value();
            json.skipSpace();
            if (json.at != text.length()) throw json.error("trailing data");
            return value;
        }

        private Object value() {
            skipSpace();
            if (at >= text.length()) throw error("unexpected end");
            switch (text.charAt(at)) {
                case '{': return object();
                case '[': return array();
                case '"': return string();
                case 't': return literal("true", Boolean.TRUE);
                case 'f': return literal("false", Boolean.FALSE);
                case 'n': return literal("null", null);
                default: return number();
            }
        }

        private Map<String, Object> object() {
            Map<String, Object> map = new LinkedHashMap<>();
            at++; // {
            skipSpace();
            if (take('}')) return map;
            do {
                skipSpace();
                if (at >= text.length() || text.charAt(at) != '"') throw error("expected a key");
                String key = string();
                skipSpace();
                if (!take(':')) throw error("expected ':'");
                map.put(key, value());
                skipSpace();
            } while (take(','));
            if (!take('}')) throw error("expected ',' or '}'");
            return map;
        }

        private List<Object> array() {
            List<Object> list = new ArrayList<>();
            at++; // [
            skipSpace();
            if (take(']')) return list;
            do {
                list.add(value());
                skipSpace();
            } while (take(','));
            if (!take(']')) throw error("expected ',' or ']'");
            return list;
        }

        private String string() {
            StringBuilder out = new StringBuilder();
            at++; // opening quote
            while (true) {
                if (at >= text.length()) throw error("unterminated string");
                char c = text.charAt(at++);
                if (c == '"') return out.toString();
                if (c < 0x20) throw error("control character in a string");
                if (c != '\\') {
                    out.append(c);
                    continue;
                }
                if (at >= text.length()) throw error("unterminated string");
                char escape = text.charAt(at++);
                switch (escape) {
                    case '"': case '\\': case '/': out.append(escape); break;
                    case 'b': out.append('\b'); break;
                    case 'f': out.append('\f'); break;
                    case 'n': out.append('\n'); break;
                    case 'r': out.append('\r'); break;
                    case 't': out.append('\t'); break;
                    case 'u':
                        if (at + 4 > text.length() || !HEX4.matcher(text.substring(at, at + 4)).matches()) {
                            throw error("bad \\u escape");
                        }
                        out.append((char) Integer.parseInt(text.substring(at, at + 4), 16)); // surrogates pass as is
                        at += 4;
                        break;
                    default: throw error("bad escape");
                }
            }
        }

        private Object number() {
            Matcher m = NUMBER.matcher(text).region(at, text.length());
            if (!m.lookingAt()) throw error("unexpected character");
            at = m.end();
            return new java.math.BigDecimal(m.group());
        }

        private Object literal(String word, Object value) {
            if (!text.startsWith(word, at)) throw error("unexpected character");
            at += word.length();
            return value;
        }

        private boolean take(char c) {
            if (at < text.length() && text.charAt(at) == c) {
                at++;
                return true;
            }
            return false;
        }

        private void skipSpace() {
            while (at < text.length() && " \t\r\n".indexOf(text.charAt(at)) >= 0) at++;
        }

        private IllegalArgumentException error(String problem) {
            return new IllegalArgumentException("JSON: " + problem + " at " + at);
        }
    }
}
