// Package jsonscan reads a strict subset of JSON without reflection or
// copies, for the hand-written decoders of hot request shapes (the JSON-RPC
// envelope, eth_simulateV1's request and call objects). The subset is what
// it can validate exactly: ASCII strings without escapes, numbers per the
// grammar, the three literals, nesting up to MaxDepth. A decoder built on
// it reports "not in the subset" on anything else, and its caller decodes
// with encoding/json, which then decides (and words any error).
package jsonscan

// MaxDepth bounds nesting: Value refuses deeper values.
const MaxDepth = 32

// Scanner reads b from its start; the values it returns are sub-slices of b.
type Scanner struct {
	b []byte
	i int
}

// New is a scanner of b.
func New(b []byte) Scanner { return Scanner{b: b} }

// Next is the byte at the position (0 at the end), whitespace not skipped.
func (s *Scanner) Next() byte {
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// Advance moves past the byte at the position.
func (s *Scanner) Advance() { s.i++ }

// WS skips whitespace.
func (s *Scanner) WS() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// Peek skips whitespace and is the byte then at the position (0 at the end).
func (s *Scanner) Peek() byte {
	s.WS()
	return s.Next()
}

// End reports whether only whitespace is left.
func (s *Scanner) End() bool {
	s.WS()
	return s.i == len(s.b)
}

// Str reads a string in the subset (after whitespace) and returns it with
// its quotes (what UnmarshalJSON methods take); its contents are
// tok[1:len(tok)-1].
func (s *Scanner) Str() ([]byte, bool) {
	if s.Peek() != '"' {
		return nil, false
	}
	start := s.i
	for j := start + 1; j < len(s.b); j++ {
		c := s.b[j]
		if c == '"' {
			s.i = j + 1
			return s.b[start:s.i], true
		}
		if c < 0x20 || c == '\\' || c >= 0x80 {
			return nil, false
		}
	}
	return nil, false
}

// Literal reads lit (true, false, null) if it comes next, after whitespace.
func (s *Scanner) Literal(lit string) bool {
	s.WS()
	if len(s.b)-s.i < len(lit) || string(s.b[s.i:s.i+len(lit)]) != lit {
		return false
	}
	s.i += len(lit)
	return true
}

// Null reads null if it comes next.
func (s *Scanner) Null() bool { return s.Peek() == 'n' && s.Literal("null") }

// Bool reads true or false into dst; null leaves dst alone.
func (s *Scanner) Bool(dst *bool) bool {
	switch s.Peek() {
	case 'n':
		return s.Literal("null")
	case 't':
		*dst = true
		return s.Literal("true")
	case 'f':
		*dst = false
		return s.Literal("false")
	}
	return false
}

// Number reads a number exactly per the grammar.
func (s *Scanner) Number() bool {
	s.WS()
	digits := func() int {
		n := 0
		for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
			s.i++
			n++
		}
		return n
	}
	if s.Next() == '-' {
		s.i++
	}
	switch c := s.Next(); {
	case c == '0':
		s.i++
	case c >= '1' && c <= '9':
		digits()
	default:
		return false
	}
	if s.Next() == '.' {
		s.i++
		if digits() == 0 {
			return false
		}
	}
	if c := s.Next(); c == 'e' || c == 'E' {
		s.i++
		if c := s.Next(); c == '+' || c == '-' {
			s.i++
		}
		if digits() == 0 {
			return false
		}
	}
	return true
}

// Value reads any one value at nesting depth (0 for a top-level value) and
// returns it raw.
func (s *Scanner) Value(depth int) ([]byte, bool) {
	s.WS()
	start := s.i
	var ok bool
	switch c := s.Next(); {
	case c == '"':
		_, ok = s.Str()
	case c == '{':
		ok = depth < MaxDepth && s.Object(func([]byte) bool {
			_, ok := s.Value(depth + 1)
			return ok
		})
	case c == '[':
		ok = depth < MaxDepth && s.Array(func() bool {
			_, ok := s.Value(depth + 1)
			return ok
		})
	case c == 't':
		ok = s.Literal("true")
	case c == 'f':
		ok = s.Literal("false")
	case c == 'n':
		ok = s.Literal("null")
	case c == '-' || c >= '0' && c <= '9':
		ok = s.Number()
	}
	if !ok {
		return nil, false
	}
	return s.b[start:s.i], true
}

// Object reads an object, calling field for each member with its key's
// contents; field reads the value.
func (s *Scanner) Object(field func(key []byte) bool) bool {
	if s.Peek() != '{' {
		return false
	}
	s.i++
	if s.Peek() == '}' {
		s.i++
		return true
	}
	for {
		k, ok := s.Str()
		if !ok || s.Peek() != ':' {
			return false
		}
		s.i++
		if !field(k[1 : len(k)-1]) {
			return false
		}
		switch s.Peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return true
		default:
			return false
		}
	}
}

// Array reads an array, calling elem for each element; elem reads it.
func (s *Scanner) Array(elem func() bool) bool {
	if s.Peek() != '[' {
		return false
	}
	s.i++
	if s.Peek() == ']' {
		s.i++
		return true
	}
	for {
		if !elem() {
			return false
		}
		switch s.Peek() {
		case ',':
			s.i++
		case ']':
			s.i++
			return true
		default:
			return false
		}
	}
}
