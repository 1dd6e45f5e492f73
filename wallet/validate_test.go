package wallet

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"testing"

	"github.com/preconf/preconf/rpc"
)

// params builds rpc.Params from a JSON array text.
func params(t *testing.T, js string) rpc.Params {
	t.Helper()
	var p rpc.Params
	if err := json.Unmarshal([]byte(js), &p); err != nil {
		t.Fatalf("bad test params %s: %v", js, err)
	}
	return p
}

// chainData returns a valid chainData object with fields overridden or
// removed (a nil value removes the key); key order follows base order then
// added keys.
func chainData(over map[string]any) string {
	base := []struct {
		k string
		v any
	}{
		{"chainId", "0x2a"},
		{"chainName", "Test Chain"},
		{"nativeCurrency", map[string]any{"name": "Ether", "symbol": "ETH", "decimals": 18}},
		{"rpcUrls", []string{"https://rpc.example.com"}},
	}
	var parts []string
	seen := map[string]bool{}
	for _, kv := range base {
		v := kv.v
		if o, ok := over[kv.k]; ok {
			v = o
			seen[kv.k] = true
		}
		if v == nil {
			continue
		}
		b, _ := json.Marshal(v)
		parts = append(parts, fmt.Sprintf("%q:%s", kv.k, b))
	}
	var extra []string
	for k := range over {
		if !seen[k] {
			extra = append(extra, k)
		}
	}
	// deterministic order for added keys
	for i := range extra {
		for j := i + 1; j < len(extra); j++ {
			if extra[j] < extra[i] {
				extra[i], extra[j] = extra[j], extra[i]
			}
		}
	}
	for _, k := range extra {
		if over[k] == nil {
			continue
		}
		b, _ := json.Marshal(over[k])
		parts = append(parts, fmt.Sprintf("%q:%s", k, b))
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func cur(name, symbol string, decimals any) map[string]any {
	m := map[string]any{}
	if name != "" {
		m["name"] = name
	}
	if symbol != "" {
		m["symbol"] = symbol
	}
	if decimals != nil {
		m["decimals"] = decimals
	}
	return m
}

// raw marks a value to be inserted verbatim as JSON.
type raw string

func (r raw) MarshalJSON() ([]byte, error) { return []byte(r), nil }

func TestValidateAdd(t *testing.T) {
	long := strings.Repeat("n", 150)
	many := make([]string, 17)
	for i := range many {
		many[i] = fmt.Sprintf("https://rpc%d.example.com", i)
	}
	tests := []struct {
		name   string
		params string // JSON array
		msg    string // exact -32602 message; "" = valid
		check  func(t *testing.T, c Chain)
	}{
		// ---- valid requests ----
		{name: "minimal valid", params: "[" + chainData(nil) + "]", check: func(t *testing.T, c Chain) {
			want := Chain{ChainID: "0x2a", ChainName: "Test Chain", NativeCurrency: Currency{"Ether", "ETH", 18}, RPCURLs: []string{"https://rpc.example.com"}}
			if !c.Equal(want) {
				t.Errorf("got %+v, want %+v", c, want)
			}
		}},
		{name: "upper-case chain id is canonicalised", params: "[" + chainData(map[string]any{"chainId": "0xABC"}) + "]", check: func(t *testing.T, c Chain) {
			if c.ChainID != "0xabc" {
				t.Errorf("chainId %q, want 0xabc", c.ChainID)
			}
		}},
		{name: "max safe chain id", params: "[" + chainData(map[string]any{"chainId": "0xfffffffffffec"}) + "]", check: func(t *testing.T, c Chain) {
			if c.ID().Int64() != MaxSafeChainID {
				t.Errorf("id %v", c.ID())
			}
		}},
		{name: "chain id 1", params: "[" + chainData(map[string]any{"chainId": "0x1"}) + "]"},
		{name: "http on localhost", params: "[" + chainData(map[string]any{"rpcUrls": []string{"http://localhost:8545"}}) + "]"},
		{name: "http on 127.0.0.1", params: "[" + chainData(map[string]any{"rpcUrls": []string{"http://127.0.0.1:8545/"}}) + "]"},
		{name: "http on [::1]", params: "[" + chainData(map[string]any{"rpcUrls": []string{"http://[::1]:8545"}}) + "]"},
		{name: "several rpc urls, duplicates folded", params: "[" + chainData(map[string]any{"rpcUrls": []string{"https://a.example", "https://b.example/path?q=1", "https://a.example"}}) + "]", check: func(t *testing.T, c Chain) {
			if len(c.RPCURLs) != 2 || c.RPCURLs[0] != "https://a.example" {
				t.Errorf("rpcUrls %v", c.RPCURLs)
			}
		}},
		{name: "explorers and icons", params: "[" + chainData(map[string]any{"blockExplorerUrls": []string{"https://scan.example"}, "iconUrls": []string{"https://icons.example/a.svg"}}) + "]", check: func(t *testing.T, c Chain) {
			if len(c.BlockExplorerURLs) != 1 || len(c.IconURLs) != 1 {
				t.Errorf("got %+v", c)
			}
		}},
		{name: "null explorers and icons", params: "[" + chainData(map[string]any{"blockExplorerUrls": raw("null"), "iconUrls": raw("null")}) + "]"},
		{name: "empty explorers", params: "[" + chainData(map[string]any{"blockExplorerUrls": []string{}}) + "]"},
		{name: "long chain name is cut to 100", params: "[" + chainData(map[string]any{"chainName": long}) + "]", check: func(t *testing.T, c Chain) {
			if c.ChainName != long[:100] {
				t.Errorf("chainName has %d characters", len(c.ChainName))
			}
		}},
		{name: "decimals 18.0", params: "[" + chainData(map[string]any{"nativeCurrency": raw(`{"name":"Ether","symbol":"ETH","decimals":18.0}`)}) + "]"},
		{name: "6-character symbol", params: "[" + chainData(map[string]any{"nativeCurrency": cur("Token", "ABCDEF", 18)}) + "]"},
		{name: "extra currency keys ignored (as MetaMask)", params: "[" + chainData(map[string]any{"nativeCurrency": raw(`{"name":"Ether","symbol":"ETH","decimals":18,"logo":"x"}`)}) + "]"},

		// ---- 1. one object parameter ----
		{name: "no params", params: `[]`, msg: "Expected single, object parameter. Received:\n[]"},
		{name: "two params", params: "[" + chainData(nil) + `, 1]`, msg: "Expected single, object parameter. Received:\n[" + chainData(nil) + ",1]"},
		{name: "array param", params: `[[1]]`, msg: "Expected single, object parameter. Received:\n[[1]]"},
		{name: "string param", params: `["0x1"]`, msg: "Expected single, object parameter. Received:\n[\"0x1\"]"},
		{name: "null param", params: `[null]`, msg: "Expected single, object parameter. Received:\n[null]"},
		{name: "oversized object", params: "[" + chainData(map[string]any{"chainName": strings.Repeat("x", maxParamBytes)}) + "]",
			msg: fmt.Sprintf("Expected single, object parameter of at most 16384 bytes. Received: %d bytes", len(chainData(map[string]any{"chainName": strings.Repeat("x", maxParamBytes)})))},
		{name: "duplicate key", params: `[{"chainId":"0x1","chainId":"0x2"}]`, msg: "duplicate key \"chainId\" on object parameter"},

		// ---- 2. unknown keys ----
		{name: "unknown keys", params: "[" + chainData(map[string]any{"foo": 1, "bar": true}) + "]", msg: "Received unexpected keys on object parameter. Unsupported keys:\nbar,foo"},

		// ---- 3, 4. chainId ----
		{name: "chainId missing", params: "[" + chainData(map[string]any{"chainId": nil}) + "]", msg: "Expected 0x-prefixed, unpadded, non-zero hexadecimal string 'chainId'. Received:\nundefined"},
		{name: "chainId number", params: "[" + chainData(map[string]any{"chainId": 42}) + "]", msg: "Expected 0x-prefixed, unpadded, non-zero hexadecimal string 'chainId'. Received:\n42"},
		{name: "chainId decimal string", params: "[" + chainData(map[string]any{"chainId": "42"}) + "]", msg: "Expected 0x-prefixed, unpadded, non-zero hexadecimal string 'chainId'. Received:\n42"},
		{name: "chainId zero", params: "[" + chainData(map[string]any{"chainId": "0x0"}) + "]", msg: "Expected 0x-prefixed, unpadded, non-zero hexadecimal string 'chainId'. Received:\n0x0"},
		{name: "chainId padded", params: "[" + chainData(map[string]any{"chainId": "0x01"}) + "]", msg: "Expected 0x-prefixed, unpadded, non-zero hexadecimal string 'chainId'. Received:\n0x01"},
		{name: "chainId bare 0x", params: "[" + chainData(map[string]any{"chainId": "0x"}) + "]", msg: "Expected 0x-prefixed, unpadded, non-zero hexadecimal string 'chainId'. Received:\n0x"},
		{name: "chainId not hex", params: "[" + chainData(map[string]any{"chainId": "0xg1"}) + "]", msg: "Expected 0x-prefixed, unpadded, non-zero hexadecimal string 'chainId'. Received:\n0xg1"},
		{name: "chainId with space", params: "[" + chainData(map[string]any{"chainId": " 0x1"}) + "]", msg: "Expected 0x-prefixed, unpadded, non-zero hexadecimal string 'chainId'. Received:\n 0x1"},
		{name: "chainId null", params: "[" + chainData(map[string]any{"chainId": raw("null")}) + "]", msg: "Expected 0x-prefixed, unpadded, non-zero hexadecimal string 'chainId'. Received:\nnull"},
		{name: "chainId above max safe", params: "[" + chainData(map[string]any{"chainId": "0xFFFFFFFFFFFED"}) + "]", msg: "Invalid chain ID \"0xfffffffffffed\": numerical value greater than max safe value. Received:\n0xFFFFFFFFFFFED"},
		{name: "chainId huge", params: "[" + chainData(map[string]any{"chainId": "0x" + strings.Repeat("f", 80)}) + "]", msg: "Invalid chain ID \"0x" + strings.Repeat("f", 80) + "\": numerical value greater than max safe value. Received:\n0x" + strings.Repeat("f", 80)},

		// ---- 5. rpcUrls ----
		{name: "rpcUrls missing", params: "[" + chainData(map[string]any{"rpcUrls": nil}) + "]", msg: "Expected an array with at least one valid string HTTPS url 'rpcUrls', Received:\nundefined"},
		{name: "rpcUrls empty", params: "[" + chainData(map[string]any{"rpcUrls": []string{}}) + "]", msg: "Expected an array with at least one valid string HTTPS url 'rpcUrls', Received:\n"},
		{name: "rpcUrls a string", params: "[" + chainData(map[string]any{"rpcUrls": "https://rpc.example.com"}) + "]", msg: "Expected an array with at least one valid string HTTPS url 'rpcUrls', Received:\nhttps://rpc.example.com"},
		{name: "rpcUrls with a number", params: "[" + chainData(map[string]any{"rpcUrls": []any{1}}) + "]", msg: "Expected an array with at least one valid string HTTPS url 'rpcUrls', Received:\n1"},
		{name: "rpcUrls plain http", params: "[" + chainData(map[string]any{"rpcUrls": []string{"http://rpc.example.com"}}) + "]", msg: "Expected an array with at least one valid string HTTPS url 'rpcUrls', Received:\nhttp://rpc.example.com"},
		{name: "rpcUrls file", params: "[" + chainData(map[string]any{"rpcUrls": []string{"file:///etc/passwd"}}) + "]", msg: "Expected an array with at least one valid string HTTPS url 'rpcUrls', Received:\nfile:///etc/passwd"},
		{name: "rpcUrls ws", params: "[" + chainData(map[string]any{"rpcUrls": []string{"wss://rpc.example.com"}}) + "]", msg: "Expected an array with at least one valid string HTTPS url 'rpcUrls', Received:\nwss://rpc.example.com"},
		{name: "rpcUrls no host", params: "[" + chainData(map[string]any{"rpcUrls": []string{"https://"}}) + "]", msg: "Expected an array with at least one valid string HTTPS url 'rpcUrls', Received:\nhttps://"},
		{name: "rpcUrls relative", params: "[" + chainData(map[string]any{"rpcUrls": []string{"/rpc"}}) + "]", msg: "Expected an array with at least one valid string HTTPS url 'rpcUrls', Received:\n/rpc"},
		{name: "rpcUrls credentials", params: "[" + chainData(map[string]any{"rpcUrls": []string{"https://u:p@rpc.example.com"}}) + "]", msg: "Expected an array with at least one valid string HTTPS url 'rpcUrls', Received:\nhttps://u:p@rpc.example.com"},
		{name: "rpcUrls localhost lookalike", params: "[" + chainData(map[string]any{"rpcUrls": []string{"http://localhost.example.com"}}) + "]", msg: "Expected an array with at least one valid string HTTPS url 'rpcUrls', Received:\nhttp://localhost.example.com"},
		{name: "rpcUrls valid then invalid", params: "[" + chainData(map[string]any{"rpcUrls": []string{"https://ok.example", "javascript:alert(1)"}}) + "]",
			msg: "Invalid URL in 'rpcUrls': \"javascript:alert(1)\" is not an https URL. Received:\nhttps://ok.example,javascript:alert(1)"},
		{name: "rpcUrls too many", params: "[" + chainData(map[string]any{"rpcUrls": many}) + "]", msg: "Expected at most 16 entries in 'rpcUrls'. Received: 17"},
		{name: "rpcUrls url too long", params: "[" + chainData(map[string]any{"rpcUrls": []string{"https://ok.example", "https://x.example/" + strings.Repeat("a", 3000)}}) + "]",
			msg: "Invalid URL in 'rpcUrls': URL longer than 2048 characters. Received:\nhttps://ok.example,https://x.example/" + strings.Repeat("a", maxReceivedEcho-len("https://ok.example,https://x.example/")) + "…"},

		// ---- explorers and icons ----
		{name: "explorers a string", params: "[" + chainData(map[string]any{"blockExplorerUrls": "https://scan.example"}) + "]", msg: "Expected null or array with at least one valid string HTTPS URL 'blockExplorerUrl'. Received: https://scan.example"},
		{name: "explorers http", params: "[" + chainData(map[string]any{"blockExplorerUrls": []string{"http://scan.example"}}) + "]", msg: "Expected null or array with at least one valid string HTTPS URL 'blockExplorerUrl'. Received: http://scan.example"},
		{name: "explorers one bad", params: "[" + chainData(map[string]any{"blockExplorerUrls": []string{"https://scan.example", "ftp://scan.example"}}) + "]", msg: "Expected null or array with at least one valid string HTTPS URL 'blockExplorerUrl'. Received: https://scan.example,ftp://scan.example"},
		{name: "explorers too many", params: "[" + chainData(map[string]any{"blockExplorerUrls": many}) + "]", msg: "Expected at most 16 entries in 'blockExplorerUrls'. Received: 17"},
		{name: "icons data url", params: "[" + chainData(map[string]any{"iconUrls": []string{"data:image/png;base64,AAAA"}}) + "]", msg: "Expected null or array of valid string HTTPS URLs 'iconUrls'. Received: data:image/png;base64,AAAA"},
		{name: "icons an object", params: "[" + chainData(map[string]any{"iconUrls": map[string]any{}}) + "]", msg: "Expected null or array of valid string HTTPS URLs 'iconUrls'. Received: [object Object]"},

		// ---- 6. chainName ----
		{name: "chainName missing", params: "[" + chainData(map[string]any{"chainName": nil}) + "]", msg: "Expected non-empty string 'chainName'. Received:\nundefined"},
		{name: "chainName empty", params: "[" + chainData(map[string]any{"chainName": ""}) + "]", msg: "Expected non-empty string 'chainName'. Received:\n"},
		{name: "chainName number", params: "[" + chainData(map[string]any{"chainName": 5}) + "]", msg: "Expected non-empty string 'chainName'. Received:\n5"},
		{name: "chainName oversized", params: "[" + chainData(map[string]any{"chainName": strings.Repeat("x", 1001)}) + "]", msg: "Expected non-empty string 'chainName' of at most 1000 characters. Received: a string of 1001 characters"},
		{name: "chainName control chars", params: "[" + chainData(map[string]any{"chainName": "a\u0000b"}) + "]", msg: "Expected 'chainName' without control characters. Received:\n\"a\\x00b\""},

		// ---- 7-9. nativeCurrency ----
		{name: "currency missing", params: "[" + chainData(map[string]any{"nativeCurrency": nil}) + "]", msg: "Expected object 'nativeCurrency' with name, symbol and decimals (it is required here). Received:\nundefined"},
		{name: "currency null", params: "[" + chainData(map[string]any{"nativeCurrency": raw("null")}) + "]", msg: "Expected object 'nativeCurrency' with name, symbol and decimals (it is required here). Received:\nnull"},
		{name: "currency a string", params: "[" + chainData(map[string]any{"nativeCurrency": "ETH"}) + "]", msg: "Expected null or object 'nativeCurrency'. Received:\nETH"},
		{name: "currency an array", params: "[" + chainData(map[string]any{"nativeCurrency": []string{"ETH"}}) + "]", msg: "Expected null or object 'nativeCurrency'. Received:\nETH"},
		{name: "decimals 6", params: "[" + chainData(map[string]any{"nativeCurrency": cur("USD", "USDC", 6)}) + "]", msg: "Expected the number 18 for 'nativeCurrency.decimals' when 'nativeCurrency' is provided. Received: 6"},
		{name: "decimals string", params: "[" + chainData(map[string]any{"nativeCurrency": cur("Ether", "ETH", "18")}) + "]", msg: "Expected the number 18 for 'nativeCurrency.decimals' when 'nativeCurrency' is provided. Received: 18"},
		{name: "decimals missing", params: "[" + chainData(map[string]any{"nativeCurrency": cur("Ether", "ETH", nil)}) + "]", msg: "Expected the number 18 for 'nativeCurrency.decimals' when 'nativeCurrency' is provided. Received: undefined"},
		{name: "decimals negative", params: "[" + chainData(map[string]any{"nativeCurrency": cur("Ether", "ETH", -1)}) + "]", msg: "Expected the number 18 for 'nativeCurrency.decimals' when 'nativeCurrency' is provided. Received: -1"},
		{name: "decimals fraction", params: "[" + chainData(map[string]any{"nativeCurrency": cur("Ether", "ETH", 18.5)}) + "]", msg: "Expected the number 18 for 'nativeCurrency.decimals' when 'nativeCurrency' is provided. Received: 18.5"},
		{name: "symbol missing", params: "[" + chainData(map[string]any{"nativeCurrency": cur("Ether", "", 18)}) + "]", msg: "Expected a string 'nativeCurrency.symbol'. Received: undefined"},
		{name: "symbol number", params: "[" + chainData(map[string]any{"nativeCurrency": raw(`{"name":"Ether","symbol":5,"decimals":18}`)}) + "]", msg: "Expected a string 'nativeCurrency.symbol'. Received: 5"},
		{name: "symbol empty", params: "[" + chainData(map[string]any{"nativeCurrency": raw(`{"name":"Ether","symbol":"","decimals":18}`)}) + "]", msg: "Expected a string 'nativeCurrency.symbol'. Received: "},
		{name: "symbol 7 characters", params: "[" + chainData(map[string]any{"nativeCurrency": cur("Ether", "ABCDEFG", 18)}) + "]", msg: "Expected 1-6 character string 'nativeCurrency.symbol'. Received:\nABCDEFG"},
		{name: "currency name missing", params: "[" + chainData(map[string]any{"nativeCurrency": cur("", "ETH", 18)}) + "]", msg: "Expected non-empty string 'nativeCurrency.name'. Received:\nundefined"},
		{name: "currency name empty", params: "[" + chainData(map[string]any{"nativeCurrency": raw(`{"name":"","symbol":"ETH","decimals":18}`)}) + "]", msg: "Expected non-empty string 'nativeCurrency.name'. Received:\n"},
		{name: "currency name oversized", params: "[" + chainData(map[string]any{"nativeCurrency": cur(strings.Repeat("e", 101), "ETH", 18)}) + "]", msg: "Expected a string of 1-100 characters 'nativeCurrency.name'. Received: a string of 101 characters"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ValidateAdd(params(t, tc.params))
			if tc.msg == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				if tc.check != nil {
					tc.check(t, c)
				}
				return
			}
			var ip *rpc.InvalidParamsError
			if !errors.As(err, &ip) {
				t.Fatalf("got %v (%T), want -32602 %q", err, err, tc.msg)
			}
			if ip.Msg != tc.msg {
				t.Errorf("message:\n got %q\nwant %q", ip.Msg, tc.msg)
			}
		})
	}
}

// MetaMask's order: the first failing check is the one reported.
func TestValidateAddOrder(t *testing.T) {
	p := params(t, `[{"chainId":"0x0","rpcUrls":[],"chainName":"","nativeCurrency":{"decimals":6}}]`)
	_, err := ValidateAdd(p)
	if err == nil || !strings.HasPrefix(err.Error(), "Expected 0x-prefixed") {
		t.Errorf("chainId must be checked first, got %v", err)
	}
	p = params(t, `[{"chainId":"0x1","rpcUrls":[],"chainName":"","nativeCurrency":{"decimals":6}}]`)
	if _, err = ValidateAdd(p); err == nil || !strings.HasPrefix(err.Error(), "Expected an array with at least one valid string HTTPS url 'rpcUrls'") {
		t.Errorf("rpcUrls before chainName, got %v", err)
	}
	p = params(t, `[{"chainId":"0x1","rpcUrls":["https://a.example"],"chainName":"","nativeCurrency":{"decimals":6}}]`)
	if _, err = ValidateAdd(p); err == nil || !strings.HasPrefix(err.Error(), "Expected non-empty string 'chainName'") {
		t.Errorf("chainName before nativeCurrency, got %v", err)
	}
}

func TestValidateSwitch(t *testing.T) {
	tests := []struct {
		params, id, msg string
	}{
		{`[{"chainId":"0x539"}]`, "0x539", ""},
		{`[{"chainId":"0xA"}]`, "0xa", ""},
		{`[]`, "", "Expected single, object parameter. Received:\n[]"},
		{`["0x1"]`, "", "Expected single, object parameter. Received:\n[\"0x1\"]"},
		{`[{"chainId":"0x1","chainName":"x"}]`, "", "Received unexpected keys on object parameter. Unsupported keys:\nchainName"},
		{`[{"chainId":"1"}]`, "", "Expected 0x-prefixed, unpadded, non-zero hexadecimal string 'chainId'. Received:\n1"},
		{`[{}]`, "", "Expected 0x-prefixed, unpadded, non-zero hexadecimal string 'chainId'. Received:\nundefined"},
		{`[{"chainId":"0x10000000000000"}]`, "", "Invalid chain ID \"0x10000000000000\": numerical value greater than max safe value. Received:\n0x10000000000000"},
	}
	for _, tc := range tests {
		id, err := ValidateSwitch(params(t, tc.params))
		if tc.msg == "" {
			if err != nil || id != tc.id {
				t.Errorf("%s: got %q, %v; want %q", tc.params, id, err, tc.id)
			}
			continue
		}
		var ip *rpc.InvalidParamsError
		if !errors.As(err, &ip) || ip.Msg != tc.msg {
			t.Errorf("%s: got %v, want -32602 %q", tc.params, err, tc.msg)
		}
	}
}

func TestCheckURL(t *testing.T) {
	good := []string{"https://a.example", "https://a.example:8443/x?y=1#z", "http://localhost", "http://LOCALHOST:1",
		"http://127.0.0.1", "http://127.1.2.3:80", "http://[::1]:8545", "HTTPS://A.EXAMPLE"}
	bad := []string{"", "http://a.example", "ftp://a.example", "file:///x", "javascript:alert(1)", "data:text/html,x",
		"https://", "https:///path", "https://a b.example", "https://u@a.example", "https://a.example:0", "https://a.example:70000",
		"mailto:x@a.example", "//a.example", "http://0.0.0.0", "http://10.0.0.1", "https://a.example/\n"}
	for _, u := range good {
		if err := CheckURL(u); err != nil {
			t.Errorf("CheckURL(%q) = %v, want ok", u, err)
		}
	}
	for _, u := range bad {
		if err := CheckURL(u); err == nil {
			t.Errorf("CheckURL(%q) ok, want an error", u)
		}
	}
}

func TestJSString(t *testing.T) {
	tests := []struct {
		in   string
		want string
	}{
		{`"a"`, "a"}, {`1`, "1"}, {`1.50`, "1.5"}, {`1e2`, "100"}, {`true`, "true"}, {`null`, "null"},
		{`["a",1,null,["b","c"]]`, "a,1,,b,c"}, {`{"a":1}`, "[object Object]"}, {`[]`, ""},
	}
	for _, tc := range tests {
		if got := jsString(json.RawMessage(tc.in), true); got != tc.want {
			t.Errorf("jsString(%s) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := jsString(nil, false); got != "undefined" {
		t.Errorf("absent = %q", got)
	}
}

func TestMerge(t *testing.T) {
	old := Chain{ChainID: "0x2a", ChainName: "A", NativeCurrency: Currency{"Ether", "ETH", 18}, RPCURLs: []string{"https://a.example", "https://b.example"}}
	if m := merge(old, Chain{ChainID: "0x2a", ChainName: "A", NativeCurrency: old.NativeCurrency, RPCURLs: []string{"https://b.example"}}); !m.Equal(old) {
		t.Errorf("subset request changed the entry: %+v", m)
	}
	m := merge(old, Chain{ChainID: "0x2a", ChainName: "A", NativeCurrency: old.NativeCurrency, RPCURLs: []string{"https://c.example"}})
	if want := []string{"https://c.example", "https://a.example", "https://b.example"}; strings.Join(m.RPCURLs, " ") != strings.Join(want, " ") {
		t.Errorf("merged rpcUrls %v, want %v", m.RPCURLs, want)
	}
	if m := merge(old, Chain{ChainID: "0x2a", ChainName: "B", NativeCurrency: old.NativeCurrency, RPCURLs: old.RPCURLs}); m.Equal(old) || m.ChainName != "B" {
		t.Errorf("rename not merged: %+v", m)
	}
}

func TestIsLoopbackAddr(t *testing.T) {
	for addr, want := range map[string]bool{
		"": true, "127.0.0.1": true, "127.0.0.1:8545": true, "localhost": true, "::1": true, "[::1]:8545": true,
		"0.0.0.0": false, "::": false, "192.168.1.5": false, "node.example": false, "0.0.0.0:8545": false,
	} {
		if got := IsLoopbackAddr(addr); got != want {
			t.Errorf("IsLoopbackAddr(%q) = %v, want %v", addr, got, want)
		}
	}
	// Private targets do not depend on it: only AllowPrivate opens them
	// (loopback ones do: TestProbePolicyFromConfig).
	for addr, want := range map[string]bool{"127.0.0.1": false, "0.0.0.0": false} {
		cfg := Config{Approval: ModeAuto, NodeAddr: addr, Self: SelfChain(big.NewInt(1), Chain{})}
		w, err := Open(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if w.AllowsPrivateTargets() != want {
			t.Errorf("node on %s: private targets allowed = %v, want %v", addr, !want, want)
		}
		cfg.AllowPrivate = true
		if w, _ = Open(cfg); !w.AllowsPrivateTargets() {
			t.Errorf("--wallet.allow-private ignored on %s", addr)
		}
	}
}
