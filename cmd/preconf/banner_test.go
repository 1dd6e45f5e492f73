package main

import (
	"math/big"
	"path/filepath"
	"strings"
	"testing"

	"github.com/preconf/preconf/chain"
)

// The dev chain starts with anvil's banner: accounts with balances, keys,
// mnemonic, chain id, endpoints.
func TestDevBanner(t *testing.T) {
	p := start(t, "--datadir", t.TempDir(), "--block-time", "2s")
	p.stop(t) // then the output is complete and no longer written
	out := p.out.String()
	for _, want := range []string{
		"Available Accounts",
		"(0) 0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266 (10000.000000000000000000 ETH)",
		"(9) 0xa0Ee7A142d267C1f36714E4a8F75612F20a79720 (10000.000000000000000000 ETH)",
		"Private Keys",
		"(0) 0x" + chain.DevKeys[0],
		"(9) 0x" + chain.DevKeys[9],
		"Mnemonic:          " + chain.DevMnemonic,
		"Chain ID:          1337\n",
		"Kind:              OP-stack L2 as the chains that pre-confirm run it",
		"Forks:             Bedrock through Karst\n",
		"L1:                simulated, a block every 12s",
		"a flashblock every 200ms",
		"a block every 2s",
		"Page:              " + p.url + "/ (open it in a browser",
		"JSON-RPC:          " + p.url,
		"Listening on " + strings.TrimPrefix(p.url, "http://"),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("banner lacks %q:\n%s", want, out)
		}
	}
}

// With --l1 the banner names the plain-Ethereum dev chain.
func TestDevBannerL1(t *testing.T) {
	p := start(t, "--datadir", t.TempDir(), "--block-time", "0", "--l1")
	p.stop(t)
	out := p.out.String()
	for _, want := range []string{"(0) 0x" + chain.DevKeys[0], "Kind:              plain Ethereum (--l1)"} {
		if !strings.Contains(out, want) {
			t.Errorf("banner lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "OP-stack") {
		t.Errorf("the l1 banner speaks of the OP stack:\n%s", out)
	}
}

// No banner (no keys) for a --genesis chain, nor for a datadir created with
// one and restarted without the flag.
func TestNoBannerForOtherChains(t *testing.T) {
	genesis := filepath.Join(fixtures(t), "genesis.json")
	datadir := t.TempDir()
	for _, args := range [][]string{
		{"--datadir", datadir, "--genesis", genesis, "--block-time", "0"},
		{"--datadir", datadir, "--block-time", "0"},
	} {
		p := start(t, args...)
		p.stop(t)
		if out := p.out.String(); strings.Contains(out, "Private Keys") || strings.Contains(out, chain.DevKeys[0]) {
			t.Errorf("%v printed the dev keys:\n%s", args, out)
		}
	}
}

// A second node on a datadir in use exits at once and says why.
func TestDataDirInUse(t *testing.T) {
	datadir := t.TempDir()
	p := start(t, "--datadir", datadir, "--block-time", "0")
	defer p.stop(t)
	out, code := run(t, "--datadir", datadir, "--block-time", "0", "--http.port", freePort(t))
	if code == 0 || !strings.Contains(out, "another preconf is using "+datadir) {
		t.Fatalf("exit %d, output:\n%s", code, out)
	}
}

func TestEther(t *testing.T) {
	for wei, want := range map[string]string{
		"0":                       "0.000000000000000000",
		"1":                       "0.000000000000000001",
		"1000000000000000000":     "1.000000000000000000",
		"10000000000000000000000": "10000.000000000000000000",
		"1234567890123456789":     "1.234567890123456789",
	} {
		v, _ := new(big.Int).SetString(wei, 10)
		if got := ether(v); got != want {
			t.Errorf("ether(%s) = %s, want %s", wei, got, want)
		}
	}
}
