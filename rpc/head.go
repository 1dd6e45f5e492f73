package rpc

import (
	"bytes"
	"strings"
)

// headVerdict is what parseHead decided about a request head.
type headVerdict int

const (
	headFast       headVerdict = iota // answered by the fast path
	headHandOff                       // served by net/http
	headIncomplete                    // more bytes may make it either (parseHead)
	headClose                         // the head did not arrive in time (readHead)
)

// parseHead decides, from the bytes of a request that arrived so far,
// whether the fast path answers it under policy p: headFast with the
// head's length and the body's (n), or headHandOff for anything net/http
// would answer otherwise or that p does not pass as it is (a foreign Host,
// CORS, a body over the limit, chunked bodies, odd headers…), or
// headIncomplete while the head has not ended and may still be one the fast
// path takes. It reads nothing but buf (FuzzParseHead checks it against
// net/http's parser).
func parseHead(buf []byte, p *requestPolicy) (head, n int, v headVerdict) {
	const no = headHandOff
	end := bytes.Index(buf, crlfcrlf)
	if end < 0 {
		// Split across reads: wait for the rest, unless what came already
		// is not ours (net/http answers some malformed heads before they
		// are complete) or fills the buffer.
		if len(buf) >= fastBufSize || !fastPrefix(buf) {
			return 0, 0, no
		}
		return 0, 0, headIncomplete
	}
	// One pass over the lines through the last header's CRLF: each is
	// checked as fastPrefix checks those of an incomplete head (ends in
	// CRLF, a well-formed header) as it is read. Checking every line first
	// (fastPrefix) and reading them after took 1.30× the instructions for
	// BenchmarkReadHead/bench and 1.34× for /fetch (valgrind
	// --tool=callgrind, 20000 iterations each).
	head = end + 4
	rest := buf[:end+2]
	if !bytes.HasPrefix(rest, fastRequestLine) {
		return 0, 0, no
	}
	rest = rest[len(fastRequestLine):]
	n = -1
	hasHost, hasType := false, false
	for len(rest) > 0 {
		i := bytes.IndexByte(rest, '\n') // found: rest ends in CRLF
		if i < 1 || rest[i-1] != '\r' {
			return 0, 0, no // a bare LF
		}
		line := rest[:i-1]
		rest = rest[i+1:]
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 || !validHeaderName(line[:colon]) || !validHeaderValue(line[colon+1:]) {
			return 0, 0, no
		}
		name, value := line[:colon], trimOWS(line[colon+1:])
		switch {
		case asciiFold(name, "content-length"):
			if n >= 0 || len(value) == 0 || len(value) > 12 {
				return 0, 0, no
			}
			v := 0
			for _, c := range value {
				if c < '0' || c > '9' {
					return 0, 0, no
				}
				v = v*10 + int(c-'0')
			}
			n = v
		case asciiFold(name, "content-type"):
			if hasType || !contentTypeOK(string(value)) {
				return 0, 0, no
			}
			hasType = true
		case asciiFold(name, "host"):
			if hasHost || !p.hostOKBytes(value) {
				return 0, 0, no // net/http answers 403
			}
			hasHost = true
		case asciiFold(name, "connection"):
			if !asciiFold(value, "keep-alive") {
				return 0, 0, no
			}
		case asciiFold(name, "origin"):
			if p.corsOn() {
				return 0, 0, no // CORS headers are net/http's business
			}
		case asciiFold(name, "transfer-encoding"), asciiFold(name, "expect"), asciiFold(name, "upgrade"),
			asciiFold(name, "trailer"), asciiFold(name, "te"):
			return 0, 0, no
		}
	}
	if !hasHost || !hasType || n < 0 || !p.bodyOK(int64(n)) {
		return 0, 0, no
	}
	return head, n, headFast
}

var crlfcrlf = []byte("\r\n\r\n")

// validHeaderName is net/http's rule: a token (RFC 9110), looked up in
// headerTokenByte (a table: the comparisons it replaces were a third of
// BenchmarkReadHead).
func validHeaderName(b []byte) bool {
	for _, c := range b {
		if !headerTokenByte[c] {
			return false
		}
	}
	return true
}

var headerTokenByte = func() (t [256]bool) {
	for c := '!'; c < 0x7f; c++ {
		t[c] = !strings.ContainsRune(`()<>@,;:\"/[]?={}`, c)
	}
	return t
}()

var fastRequestLine = []byte("POST / HTTP/1.1\r\n")

// fastPrefix reports whether head (or its start) can be a fast-path request
// head: it begins with the one request line served here, every line ends in
// CRLF (net/http also takes a bare LF) and every complete header line is
// well-formed. net/http reads a head line by line and answers 400 at the
// first bad line, before the rest arrives: such heads go to it at once.
func fastPrefix(head []byte) bool {
	n := min(len(head), len(fastRequestLine))
	if !bytes.Equal(head[:n], fastRequestLine[:n]) {
		return false
	}
	for i := 0; ; i++ { // every LF ends a CRLF
		j := bytes.IndexByte(head[i:], '\n')
		if j < 0 {
			break
		}
		if i += j; i == 0 || head[i-1] != '\r' {
			return false
		}
	}
	if len(head) <= len(fastRequestLine) {
		return true
	}
	rest := head[len(fastRequestLine):]
	for {
		line, after, complete := cutLine(rest)
		if !complete {
			return true
		}
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 || !validHeaderName(line[:colon]) || !validHeaderValue(line[colon+1:]) {
			return false
		}
		rest = after
	}
}

// cutLine splits b at its first LF, which ends a CRLF (fastPrefix rejects
// a head with a bare LF before anything is cut): the line without its CRLF,
// the rest, and whether there was one. A byte search for LF instead of a
// search for CRLF, and trimOWS instead of bytes.Trim's cutset, took
// BenchmarkReadHead/fetch from 508-524 to 380-387 ns.
func cutLine(b []byte) (line, rest []byte, ok bool) {
	i := bytes.IndexByte(b, '\n')
	if i < 1 {
		return b, nil, false
	}
	return b[:i-1], b[i+1:], true
}

// trimOWS trims the spaces and tabs around a header value.
func trimOWS(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

// validHeaderValue is net/http's rule: no control bytes but tab.
func validHeaderValue(v []byte) bool {
	for _, c := range v {
		if (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

func asciiFold(b []byte, lower string) bool {
	if len(b) != len(lower) {
		return false
	}
	for i := range b {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}
