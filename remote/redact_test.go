package remote

import "testing"

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://base-mainnet.example/v2/SECRETKEY":          "https://base-mainnet.example",
		"https://user:pass@node.example:8545/?apikey=SECRET": "https://node.example:8545",
		"wss://feed.example/ws?token=SECRET":                 "wss://feed.example",
		"http://127.0.0.1:8545":                              "http://127.0.0.1:8545",
		"not a url":                                          "(upstream)",
	} {
		if got := RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}
