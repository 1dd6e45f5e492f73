package main

import (
	"slices"
	"strings"
	"testing"
)

// TestPick: a sub-command comes first; the flags that chose a mode before
// sub-commands still choose it, wherever they stand; -install's value
// becomes the install command's argument; nothing else is compare.
func TestPick(t *testing.T) {
	cmds := commands()
	for _, tc := range []struct {
		args     string
		name     string
		rest     string
		wantsErr bool
	}{
		{"", "compare", "", false},
		{"-rounds 2 -workloads x", "compare", "-rounds 2 -workloads x", false},
		{"follow -follow-pairs 4", "follow", "-follow-pairs 4", false},
		{"-no-install -all -write-docs", "all", "-no-install -write-docs", false},
		{"-follow -follow-pairs 4", "follow", "-follow-pairs 4", false},
		{"-preconf-latency -latency-chain op", "latency", "-latency-chain op", false},
		{"-follow=false -rounds 1", "compare", "-follow=false -rounds 1", false},
		{"-install op-geth", "install", "op-geth", false},
		{"-cache /c -install=anvil,geth", "install", "-cache /c anvil,geth", false},
		{"-list", "list", "", false},
		{"nosuch", "", "", true},
	} {
		name, rest, err := pick(cmds, strings.Fields(tc.args))
		if (err != nil) != tc.wantsErr || name != tc.name || strings.Join(rest, " ") != tc.rest {
			t.Errorf("%q: %q %q %v, want %q %q", tc.args, name, rest, err, tc.name, tc.rest)
		}
	}
}

// TestAllTakesEveryFlag: all registers the shared flags and every
// experiment's but shape's, so any part's flag can be given to it.
func TestAllTakesEveryFlag(t *testing.T) {
	for _, flags := range [][]string{
		{"-rounds", "1", "-workloads", "x", "-follow-pairs", "2", "-followdefi-rates", "5,10", "-writeload-rate", "10", "-latency-txs", "5", "-bigstate-accounts", "10", "-write-docs"},
	} {
		var out strings.Builder
		// -h after the flags: parsing stops with help, so nothing runs.
		if code := run(slices.Concat([]string{"all"}, flags, []string{"-h"}), &out, &out); code != 0 {
			t.Fatalf("all %v: exit %d: %s", flags, code, out.String())
		}
	}
}
