package wallet

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"net"
	"net/netip"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"

	"github.com/preconf/preconf/rpc"
)

// Limits of what a request may carry. MetaMask's own limits are kept where it
// has them (chain id range, 100-character names, 1-6 character symbols); the
// rest bound the memory and disk a remote caller can make the wallet use.
const (
	// MaxSafeChainID is MetaMask's largest accepted chain id
	// (floor(Number.MAX_SAFE_INTEGER * 2 / 4) - 19, so ids fit EIP-155 v values).
	MaxSafeChainID = 4503599627370476

	maxParamBytes   = 16 << 10 // the whole chainData object
	maxListLen      = 16       // entries of rpcUrls, blockExplorerUrls, iconUrls
	maxURLLen       = 2048
	maxNameLen      = 100  // chainName is cut to this many characters (MetaMask)
	maxNameInput    = 1000 // longer chainName values are rejected outright
	maxCurrencyName = 100
	maxSymbolLen    = 6
	requiredDecimal = 18
	maxReceivedEcho = 1000 // characters of a bad value echoed back in a message
)

var (
	chainIDPattern = regexp.MustCompile(`^0x[1-9a-f]+[0-9a-f]*$`)
	maxSafeBig     = big.NewInt(MaxSafeChainID)
)

// addKeys are the keys EIP-3085's chainData may have, in MetaMask's order.
var addKeys = []string{"chainId", "chainName", "blockExplorerUrls", "iconUrls", "rpcUrls", "nativeCurrency"}

// object is a JSON object with its keys in document order, as JavaScript's
// Object.keys sees them.
type object struct {
	keys []string
	vals map[string]json.RawMessage
}

func (o *object) get(k string) (json.RawMessage, bool) {
	v, ok := o.vals[k]
	return v, ok
}

// parseObject reads a JSON object keeping key order; ok is false for any
// other JSON value. A repeated key is an error (JSON.parse would keep the
// last; a wallet should not guess which one the caller meant).
func parseObject(raw json.RawMessage) (o *object, ok bool, err error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return nil, false, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if _, err := dec.Token(); err != nil { // '{'
		return nil, false, err
	}
	o = &object{vals: make(map[string]json.RawMessage)}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, false, err
		}
		k, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, false, err
		}
		if _, dup := o.vals[k]; dup {
			return nil, true, fmt.Errorf("duplicate key %q on object parameter", k)
		}
		o.keys = append(o.keys, k)
		o.vals[k] = v
	}
	return o, true, nil
}

// jsString renders a JSON value the way a JavaScript template literal does
// (`${v}`), so that messages read exactly like MetaMask's. present=false is
// JavaScript's undefined. Long renderings are cut.
func jsString(v json.RawMessage, present bool) string {
	s := jsStringFull(v, present)
	if len(s) > maxReceivedEcho {
		s = s[:maxReceivedEcho] + "…"
	}
	return s
}

func jsStringFull(v json.RawMessage, present bool) string {
	v = bytes.TrimSpace(v)
	if !present || len(v) == 0 {
		return "undefined"
	}
	switch v[0] {
	case '"':
		var s string
		if json.Unmarshal(v, &s) == nil {
			return s
		}
	case '[':
		var elems []json.RawMessage
		if json.Unmarshal(v, &elems) == nil {
			parts := make([]string, len(elems))
			for i, e := range elems {
				if t := string(bytes.TrimSpace(e)); t != "null" {
					parts[i] = jsStringFull(e, true)
				}
			}
			return strings.Join(parts, ",")
		}
	case '{':
		return "[object Object]"
	case 't', 'f', 'n':
		return string(v)
	default:
		if f, err := strconv.ParseFloat(string(v), 64); err == nil {
			if f == math.Trunc(f) && math.Abs(f) < 1e21 {
				return strconv.FormatFloat(f, 'f', -1, 64)
			}
			return strconv.FormatFloat(f, 'g', -1, 64)
		}
	}
	return string(v)
}

// jsonString renders params as JSON.stringify does (compact).
func jsonString(p rpc.Params) string {
	var b bytes.Buffer
	b.WriteByte('[')
	for i, e := range p {
		if i > 0 {
			b.WriteByte(',')
		}
		if json.Compact(&b, e) != nil {
			b.Write(e)
		}
	}
	b.WriteByte(']')
	s := b.String()
	if len(s) > maxReceivedEcho {
		s = s[:maxReceivedEcho] + "…"
	}
	return s
}

// jsLen is a string's length in UTF-16 code units, as JavaScript counts.
func jsLen(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}

// jsCut cuts s to n UTF-16 code units (never splitting a character).
func jsCut(s string, n int) string {
	c := 0
	for i, r := range s {
		c += utf16.RuneLen(r)
		if c > n {
			return s[:i]
		}
	}
	return s
}

func invalid(format string, args ...any) error { return rpc.InvalidParams(format, args...) }

// singleObject checks the shape shared by both wallet methods: exactly one
// parameter, a JSON object of at most maxParamBytes, with only allowed keys.
func singleObject(p rpc.Params, allowed []string) (*object, error) {
	if len(p) != 1 {
		return nil, invalid("Expected single, object parameter. Received:\n%s", jsonString(p))
	}
	if len(p[0]) > maxParamBytes {
		return nil, invalid("Expected single, object parameter of at most %d bytes. Received: %d bytes", maxParamBytes, len(p[0]))
	}
	o, ok, err := parseObject(p[0])
	if !ok {
		return nil, invalid("Expected single, object parameter. Received:\n%s", jsonString(p))
	}
	if err != nil {
		return nil, invalid("%v", err)
	}
	var extra []string
	for _, k := range o.keys {
		known := false
		for _, a := range allowed {
			known = known || a == k
		}
		if !known {
			extra = append(extra, k)
		}
	}
	if len(extra) > 0 {
		return nil, invalid("Received unexpected keys on object parameter. Unsupported keys:\n%s", jsString(mustJSON(extra), true))
	}
	return o, nil
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

// validateChainID is MetaMask's validateChainId: lower-case, unpadded,
// non-zero 0x-hex, at most MaxSafeChainID. It returns the canonical form.
func validateChainID(o *object) (string, error) {
	raw, present := o.get("chainId")
	var s string
	isString := present && json.Unmarshal(raw, &s) == nil && len(bytes.TrimSpace(raw)) > 0 && bytes.TrimSpace(raw)[0] == '"'
	lower := strings.ToLower(s)
	if !isString || !chainIDPattern.MatchString(lower) {
		return "", invalid("Expected 0x-prefixed, unpadded, non-zero hexadecimal string 'chainId'. Received:\n%s", jsString(raw, present))
	}
	n, ok := new(big.Int).SetString(lower[2:], 16)
	if !ok || n.Sign() <= 0 || n.Cmp(maxSafeBig) > 0 {
		return "", invalid("Invalid chain ID \"%s\": numerical value greater than max safe value. Received:\n%s", jsString(mustJSON(lower), true), jsString(raw, present))
	}
	return lower, nil
}

// ValidateAdd checks wallet_addEthereumChain's parameters, in MetaMask's order
// and with its messages (each a -32602), and returns the chain to store.
// Where our interface is stricter than MetaMask (required nativeCurrency and
// its name, every URL valid, size limits) the message still names the field.
func ValidateAdd(p rpc.Params) (Chain, error) {
	o, err := singleObject(p, addKeys)
	if err != nil {
		return Chain{}, err
	}
	var c Chain
	if c.ChainID, err = validateChainID(o); err != nil {
		return Chain{}, err
	}
	if c.RPCURLs, err = validateRPCURLs(o); err != nil {
		return Chain{}, err
	}
	if c.BlockExplorerURLs, err = validateOptionalURLs(o, "blockExplorerUrls",
		"Expected null or array with at least one valid string HTTPS URL 'blockExplorerUrl'. Received: %s"); err != nil {
		return Chain{}, err
	}
	if c.IconURLs, err = validateOptionalURLs(o, "iconUrls",
		"Expected null or array of valid string HTTPS URLs 'iconUrls'. Received: %s"); err != nil {
		return Chain{}, err
	}
	if c.ChainName, err = validateChainName(o); err != nil {
		return Chain{}, err
	}
	if c.NativeCurrency, err = validateCurrency(o); err != nil {
		return Chain{}, err
	}
	return c, nil
}

// stringArray decodes a JSON array of strings; ok is false for anything else.
func stringArray(raw json.RawMessage) ([]string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '[' {
		return nil, false
	}
	var elems []json.RawMessage
	if json.Unmarshal(raw, &elems) != nil {
		return nil, false
	}
	out := make([]string, len(elems))
	for i, e := range elems {
		e = bytes.TrimSpace(e)
		if len(e) == 0 || e[0] != '"' || json.Unmarshal(e, &out[i]) != nil {
			return nil, false
		}
	}
	return out, true
}

func validateRPCURLs(o *object) ([]string, error) {
	raw, present := o.get("rpcUrls")
	msg := "Expected an array with at least one valid string HTTPS url 'rpcUrls', Received:\n%s"
	urls, ok := stringArray(raw)
	if !present || !ok || len(urls) == 0 {
		return nil, invalid(msg, jsString(raw, present))
	}
	if len(urls) > maxListLen {
		return nil, invalid("Expected at most %d entries in 'rpcUrls'. Received: %d", maxListLen, len(urls))
	}
	anyValid := false
	for _, u := range urls {
		anyValid = anyValid || CheckURL(u) == nil
	}
	if !anyValid {
		return nil, invalid(msg, jsString(raw, present))
	}
	// MetaMask uses the first valid URL and ignores the rest; the EIP says an
	// invalid URL in the list must be rejected, so we do.
	for _, u := range urls {
		if err := CheckURL(u); err != nil {
			return nil, invalid("Invalid URL in 'rpcUrls': %v. Received:\n%s", err, jsString(raw, present))
		}
	}
	return dedupe(urls), nil
}

// validateOptionalURLs: absent, null or [] mean none; otherwise an array of
// strings, each a valid URL.
func validateOptionalURLs(o *object, key, msg string) ([]string, error) {
	raw, present := o.get(key)
	if !present || string(bytes.TrimSpace(raw)) == "null" {
		return nil, nil
	}
	urls, ok := stringArray(raw)
	if !ok {
		return nil, invalid(msg, jsString(raw, present))
	}
	if len(urls) > maxListLen {
		return nil, invalid("Expected at most %d entries in '%s'. Received: %d", maxListLen, key, len(urls))
	}
	for _, u := range urls {
		if CheckURL(u) != nil {
			return nil, invalid(msg, jsString(raw, present))
		}
	}
	return dedupe(urls), nil
}

func dedupe(in []string) []string {
	var out []string
	seen := make(map[string]bool, len(in))
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

func validateChainName(o *object) (string, error) {
	raw, present := o.get("chainName")
	var s string
	trimmed := bytes.TrimSpace(raw)
	if !present || len(trimmed) == 0 || trimmed[0] != '"' || json.Unmarshal(raw, &s) != nil || s == "" {
		return "", invalid("Expected non-empty string 'chainName'. Received:\n%s", jsString(raw, present))
	}
	if n := jsLen(s); n > maxNameInput {
		return "", invalid("Expected non-empty string 'chainName' of at most %d characters. Received: a string of %d characters", maxNameInput, n)
	}
	if strings.IndexFunc(s, unicode.IsControl) >= 0 {
		return "", invalid("Expected 'chainName' without control characters. Received:\n%s", strconv.Quote(s))
	}
	return jsCut(s, maxNameLen), nil // MetaMask cuts names to 100 characters
}

func validateCurrency(o *object) (Currency, error) {
	raw, present := o.get("nativeCurrency")
	trimmed := bytes.TrimSpace(raw)
	if !present || string(trimmed) == "null" {
		// MetaMask would default to ETH; our interface requires the field.
		return Currency{}, invalid("Expected object 'nativeCurrency' with name, symbol and decimals (it is required here). Received:\n%s", jsString(raw, present))
	}
	cur, ok, err := parseObject(raw)
	if !ok {
		return Currency{}, invalid("Expected null or object 'nativeCurrency'. Received:\n%s", jsString(raw, present))
	}
	if err != nil {
		return Currency{}, invalid("'nativeCurrency': %v", err)
	}
	var c Currency
	// decimals: MetaMask accepts only the number 18, and so do we.
	dRaw, dPresent := cur.get("decimals")
	if string(bytes.TrimSpace(dRaw)) != strconv.Itoa(requiredDecimal) {
		f, err := strconv.ParseFloat(string(bytes.TrimSpace(dRaw)), 64)
		if !dPresent || err != nil || f != requiredDecimal {
			return Currency{}, invalid("Expected the number 18 for 'nativeCurrency.decimals' when 'nativeCurrency' is provided. Received: %s", jsString(dRaw, dPresent))
		}
	}
	c.Decimals = requiredDecimal
	// symbol
	sRaw, sPresent := cur.get("symbol")
	sTrim := bytes.TrimSpace(sRaw)
	if !sPresent || len(sTrim) == 0 || sTrim[0] != '"' || json.Unmarshal(sRaw, &c.Symbol) != nil || c.Symbol == "" {
		return Currency{}, invalid("Expected a string 'nativeCurrency.symbol'. Received: %s", jsString(sRaw, sPresent))
	}
	if n := jsLen(c.Symbol); n < 1 || n > maxSymbolLen || strings.IndexFunc(c.Symbol, unicode.IsControl) >= 0 {
		return Currency{}, invalid("Expected 1-6 character string 'nativeCurrency.symbol'. Received:\n%s", jsString(sRaw, sPresent))
	}
	// name: MetaMask ignores it; our interface requires a non-empty one.
	nRaw, nPresent := cur.get("name")
	nTrim := bytes.TrimSpace(nRaw)
	if !nPresent || len(nTrim) == 0 || nTrim[0] != '"' || json.Unmarshal(nRaw, &c.Name) != nil || c.Name == "" {
		return Currency{}, invalid("Expected non-empty string 'nativeCurrency.name'. Received:\n%s", jsString(nRaw, nPresent))
	}
	if n := jsLen(c.Name); n > maxCurrencyName || strings.IndexFunc(c.Name, unicode.IsControl) >= 0 {
		return Currency{}, invalid("Expected a string of 1-%d characters 'nativeCurrency.name'. Received: a string of %d characters", maxCurrencyName, n)
	}
	return c, nil
}

// ValidateSwitch checks wallet_switchEthereumChain's parameters (EIP-3326:
// [{chainId}]) and returns the canonical chain id.
func ValidateSwitch(p rpc.Params) (string, error) {
	o, err := singleObject(p, []string{"chainId"})
	if err != nil {
		return "", err
	}
	return validateChainID(o)
}

// CheckURL accepts what MetaMask's isLocalhostOrHttps accepts, a little more
// strictly: an absolute https URL with a host, or http when the host is a
// loopback one (localhost, 127.0.0.0/8, [::1]); no credentials, no spaces or
// control characters, at most maxURLLen characters. file:, data:,
// javascript: and every other scheme are refused.
func CheckURL(s string) error {
	if len(s) > maxURLLen {
		return fmt.Errorf("URL longer than %d characters", maxURLLen)
	}
	if strings.IndexFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		return fmt.Errorf("%q contains spaces or control characters", s)
	}
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("%q is not a valid URL", s)
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "https" && scheme != "http" {
		return fmt.Errorf("%q is not an https URL", s)
	}
	if u.Opaque != "" || u.Host == "" || u.Hostname() == "" {
		return fmt.Errorf("%q has no host", s)
	}
	if u.User != nil {
		return fmt.Errorf("%q carries credentials", s)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("%q has an invalid port", s)
		}
	}
	if scheme == "http" && !IsLoopbackHost(u.Hostname()) {
		return fmt.Errorf("%q is not an https URL (http is allowed only for localhost, 127.0.0.1 and [::1])", s)
	}
	return nil
}

// IsLoopbackHost reports whether a host name or address (without port) is a
// loopback one: localhost, 127.0.0.0/8 or ::1.
func IsLoopbackHost(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if host == "localhost" {
		return true
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return a.Unmap().IsLoopback()
	}
	return false
}

// IsLoopbackAddr reports whether a listening address (host or host:port) is
// loopback-only. An empty host means the default, 127.0.0.1.
func IsLoopbackAddr(addr string) bool {
	host := addr
	if h, _, err := net.SplitHostPort(addr); err == nil {
		host = h
	}
	return host == "" || IsLoopbackHost(host)
}
