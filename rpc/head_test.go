package rpc

import (
	"bufio"
	"bytes"
	"net/http"
	"strings"
	"testing"
)

// headPolicy is the policy the head tests parse under: two Host names, a
// 1 KiB body limit, CORS on or off.
func headPolicy(cors bool) *requestPolicy {
	opts := HTTPOptions{MaxBody: 1024, Hosts: NewHostAllowList([]string{"x", "localhost"})}
	if cors {
		opts.CORSOrigins = []string{"https://ok.example"}
	}
	opts.defaults()
	return newRequestPolicy(opts)
}

const plainHead = "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n"

// parseHead takes the plain keep-alive POST and nothing net/http would
// answer otherwise or the policy would not pass as it is.
func TestParseHead(t *testing.T) {
	for _, tc := range []struct {
		name string
		buf  string
		cors bool
		want headVerdict
		n    int
	}{
		{"plain", plainHead + "{}", false, headFast, 2},
		{"keep-alive, other headers", "POST / HTTP/1.1\r\nhost: localhost:8545\r\nConnection: keep-alive\r\ncontent-type: application/json; charset=utf-8\r\nAccept: */*\r\nContent-Length: 0\r\n\r\n", false, headFast, 0},
		{"origin without CORS", strings.Replace(plainHead, "Host: x", "Host: x\r\nOrigin: https://ok.example", 1), false, headFast, 2},
		{"origin with CORS", strings.Replace(plainHead, "Host: x", "Host: x\r\nOrigin: https://ok.example", 1), true, headHandOff, 0},
		{"nothing yet", "", false, headIncomplete, 0},
		{"part of the request line", "POST / HT", false, headIncomplete, 0},
		{"part of a header", "POST / HTTP/1.1\r\nHost: x\r\nContent-Ty", false, headIncomplete, 0},
		{"all but the last CRLF", strings.TrimSuffix(plainHead, "\r\n"), false, headIncomplete, 0},
		{"another method", "GET / HTTP/1.1\r\nHost: x\r\n\r\n", false, headHandOff, 0},
		{"another method, incomplete", "GET / HT", false, headHandOff, 0},
		{"another path", strings.Replace(plainHead, "POST /", "POST /x", 1), false, headHandOff, 0},
		{"HTTP/1.0", strings.Replace(plainHead, "HTTP/1.1", "HTTP/1.0", 1), false, headHandOff, 0},
		{"foreign Host", strings.Replace(plainHead, "Host: x", "Host: evil", 1), false, headHandOff, 0},
		{"two Hosts", strings.Replace(plainHead, "Host: x", "Host: x\r\nHost: x", 1), false, headHandOff, 0},
		{"no Host", strings.Replace(plainHead, "Host: x\r\n", "", 1), false, headHandOff, 0},
		{"no Content-Type", strings.Replace(plainHead, "Content-Type: application/json\r\n", "", 1), false, headHandOff, 0},
		{"wrong Content-Type", strings.Replace(plainHead, "application/json", "text/plain", 1), false, headHandOff, 0},
		{"no Content-Length", strings.Replace(plainHead, "Content-Length: 2\r\n", "", 1), false, headHandOff, 0},
		{"two Content-Lengths", strings.Replace(plainHead, "Content-Length: 2", "Content-Length: 2\r\nContent-Length: 2", 1), false, headHandOff, 0},
		{"body over the limit", strings.Replace(plainHead, "Content-Length: 2", "Content-Length: 1025", 1), false, headHandOff, 0},
		{"body at the limit", strings.Replace(plainHead, "Content-Length: 2", "Content-Length: 1024", 1), false, headFast, 1024},
		{"chunked", strings.Replace(plainHead, "Content-Length: 2", "Transfer-Encoding: chunked", 1), false, headHandOff, 0},
		{"Connection: close", strings.Replace(plainHead, "Host: x", "Host: x\r\nConnection: close", 1), false, headHandOff, 0},
		{"Expect", strings.Replace(plainHead, "Host: x", "Host: x\r\nExpect: 100-continue", 1), false, headHandOff, 0},
		{"bare LF", strings.Replace(plainHead, "Host: x\r\n", "Host: x\n", 1), false, headHandOff, 0},
		{"a line without a colon, incomplete", "POST / HTTP/1.1\r\nHost: x\r\nNoColon\r\nCont", false, headHandOff, 0},
		{"head larger than the buffer", "POST / HTTP/1.1\r\nX-A: " + strings.Repeat("a", fastBufSize), false, headHandOff, 0},
	} {
		head, n, v := parseHead([]byte(tc.buf), headPolicy(tc.cors))
		if v != tc.want || (v == headFast && (n != tc.n || head != strings.Index(tc.buf, "\r\n\r\n")+4)) {
			t.Errorf("%s: verdict %v, head %d, body %d; want %v, body %d", tc.name, v, head, n, tc.want, tc.n)
		}
	}
}

// FuzzParseHead checks parseHead against net/http's own parser, without
// sockets: a head the fast path takes is one net/http reads as the same
// request (POST / HTTP/1.1, the same head length and Content-Length, a
// keep-alive connection, no other body framing) that the policy passes; a
// head it waits on is one net/http cannot read yet either.
func FuzzParseHead(f *testing.F) {
	for _, seed := range []string{
		plainHead + "{}",
		plainHead,
		strings.TrimSuffix(plainHead, "\r\n"),
		strings.Replace(plainHead, "Host: x", "Host: x\r\nOrigin: https://ok.example", 1),
		strings.Replace(plainHead, "Content-Length: 2", "Content-Length:  2 ", 1),
		strings.Replace(plainHead, "Content-Length: 2", "Content-Length: 02", 1),
		strings.Replace(plainHead, "Content-Length: 2", "Content-Length: +2", 1),
		strings.Replace(plainHead, "Host: x", "Host:\tlocalhost.", 1),
		strings.Replace(plainHead, "Host: x", "Host: [::1]:8545", 1),
		strings.Replace(plainHead, "Host: x", "Host: x\r\nX-A: a\x01b", 1),
		strings.Replace(plainHead, "Host: x", "Host: x\r\n folded", 1),
		strings.Replace(plainHead, "application/json", "Application/JSON ; charset=utf-8", 1),
		"POST / HTTP/1.1\r\nHost: x\r\nTE: trailers\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}",
		"\r\n\r\n",
	} {
		f.Add([]byte(seed), false)
		f.Add([]byte(seed), true)
	}
	f.Fuzz(func(t *testing.T, buf []byte, cors bool) {
		p := headPolicy(cors)
		head, n, v := parseHead(buf, p)
		rest := bytes.NewReader(buf)
		br := bufio.NewReaderSize(rest, 2*fastBufSize)
		req, err := http.ReadRequest(br)
		switch v {
		case headIncomplete:
			if err == nil {
				t.Fatalf("%q: parseHead waits for more; net/http read %s %s", buf, req.Method, req.RequestURI)
			}
		case headFast:
			if err != nil {
				t.Fatalf("%q: taken by the fast path; net/http: %v", buf, err)
			}
			if consumed := len(buf) - br.Buffered() - rest.Len(); consumed != head {
				t.Fatalf("%q: head of %d bytes; net/http read %d", buf, head, consumed)
			}
			if req.Method != "POST" || req.RequestURI != "/" || req.Proto != "HTTP/1.1" || req.Close ||
				req.ContentLength != int64(n) || len(req.TransferEncoding) != 0 || len(req.Trailer) != 0 ||
				req.Header.Get("Expect") != "" || req.Header.Get("Upgrade") != "" {
				t.Fatalf("%q: taken by the fast path as a %d-byte body; net/http read %+v", buf, n, req)
			}
			if !p.hostOK(req.Host) || !contentTypeOK(req.Header.Get("Content-Type")) || !p.bodyOK(req.ContentLength) ||
				(p.corsOn() && req.Header.Get("Origin") != "") {
				t.Fatalf("%q: taken by the fast path, but the policy does not pass %+v", buf, req)
			}
		}
	})
}
