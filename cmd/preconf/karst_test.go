package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"

	"github.com/preconf/preconf/chain"
	"github.com/preconf/preconf/forkrules"
)

// The Karst rules end to end, on the processes users run: the same
// transactions and calls on the plain-Ethereum dev chain (--l1: go-ethereum's
// own Osaka) and on the OP-stack dev chain (Karst by default) give the same
// result and gas, but for the bn256Pairing cap (301 pairs refused on Karst
// only) and the deposit exemption from the gas cap; a follower of the
// OP-stack node pre-confirms the same receipts, block hashes included, and
// its simulations answer as the sequencer's.

const dev0 = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"

// clzInit deploys a contract returning CLZ of its first calldata word.
var clzInit = "0x600c600c600039600c6000f3" + "6000351e60005260206000f3"

func word(v uint64) string { return fmt.Sprintf("%064x", v) }

// p256Call is a valid P256VERIFY input.
func p256Call(t *testing.T) string {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	hash := sha256.Sum256([]byte("passkey"))
	r, s, err := ecdsa.Sign(rand.Reader, key, hash[:])
	if err != nil {
		t.Fatal(err)
	}
	in := bytes.Join([][]byte{hash[:], common.BigToHash(r).Bytes(), common.BigToHash(s).Bytes(),
		common.BigToHash(key.X).Bytes(), common.BigToHash(key.Y).Bytes()}, nil)
	return hexutil.Encode(in)
}

// pairingCall is n copies of the generators' pair (EIP-197's encoding).
func pairingCall(n int) string {
	pair := word(1) + word(2) +
		"198e9393920d483a7260bfb731fb5d25f1aa493335a9e71297e485b7aef312c2" +
		"1800deef121f1e76426a00665e5c4479674322d4f75edadd46debd5cd992f6ed" +
		"090689d0585ff075ec9e99ad690c3395bc4b313370b38ef355acdadcd122975b" +
		"12c85ea5db8c6deb4aab71808dcb408fe3d1e7690c43d37b4ce6cc0166fa7daa"
	return "0x" + strings.Repeat(pair, n)
}

type receipt struct {
	Status          hexutil.Uint64  `json:"status"`
	GasUsed         hexutil.Uint64  `json:"gasUsed"`
	ContractAddress *common.Address `json:"contractAddress"`
	BlockHash       common.Hash     `json:"blockHash"`
}

// send sends a transaction from dev0 and waits for its pre-confirmed
// receipt; it returns the hash and the receipt.
func send(t *testing.T, url, fields string) (string, receipt) {
	t.Helper()
	hash := post(t, url, `{"jsonrpc":"2.0","id":1,"method":"eth_sendTransaction","params":[{"from":"`+dev0+`"`+fields+`}]}`)
	return hash, waitReceipt(t, url, hash)
}

func waitReceipt(t *testing.T, url, hash string) receipt {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		raw := post(t, url, `{"jsonrpc":"2.0","id":1,"method":"eth_getTransactionReceipt","params":[`+hash+`]}`)
		if raw != "null" {
			var r receipt
			if err := json.Unmarshal([]byte(raw), &r); err != nil {
				t.Fatal(err)
			}
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never pre-confirmed on %s", hash, url)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// call is eth_call's whole answer (result or error) at pending.
func call(t *testing.T, url, to, data string) string {
	return postRaw(t, url, `{"jsonrpc":"2.0","id":1,"method":"eth_call","params":[{"from":"`+dev0+`","to":"`+to+`","data":"`+data+`","gas":"0xf42400"},"pending"]}`)
}

func TestKarstAgainstL1Osaka(t *testing.T) {
	l1 := start(t, "--l1", "--datadir", t.TempDir(), "--block-time", "1s")
	defer l1.stop(t)
	op := start(t, "--datadir", t.TempDir(), "--block-time", "1s")
	defer op.stop(t)
	ws := "ws" + strings.TrimPrefix(op.url, "http") + "/flashblocks"
	fol := start(t, "follow", "--upstream", op.url, "--flashblocks", ws, "--datadir", t.TempDir(), "--upstream.poll", "20ms")
	defer fol.stop(t)

	// eth_config reports Karst's precompile set at genesis.
	var cfg struct {
		Current struct {
			ActivationTime uint64                    `json:"activationTime"`
			Precompiles    map[string]common.Address `json:"precompiles"`
		} `json:"current"`
	}
	if err := json.Unmarshal([]byte(post(t, op.url, `{"jsonrpc":"2.0","id":1,"method":"eth_config","params":[]}`)), &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Current.ActivationTime != 0 || cfg.Current.Precompiles["P256VERIFY"] != common.BytesToAddress([]byte{1, 0}) || len(cfg.Current.Precompiles) != 18 {
		t.Fatalf("eth_config current %+v", cfg.Current)
	}

	p256, modexp, pairing := "0x0000000000000000000000000000000000000100", "0x0000000000000000000000000000000000000005", "0x0000000000000000000000000000000000000008"
	modexpBig := "0x" + word(1025) + word(1) + word(1) + strings.Repeat("ff", 1025) + "03" + "07"
	type sent struct {
		name string
		hash string
		r    receipt
	}
	var opTxs []sent
	var clz string
	for _, n := range []*proc{l1, op} {
		_, dep := send(t, n.url, `,"data":"`+clzInit+`"`)
		if dep.Status != 1 || dep.ContractAddress == nil {
			t.Fatalf("%s: CLZ probe not deployed: %+v", n.url, dep)
		}
		clz = dep.ContractAddress.Hex() // the same on both: the first creation of dev0
	}
	txs := []struct{ name, fields string }{
		{"CLZ", `,"to":"` + clz + `","data":"0x` + word(1) + `"`},
		{"P256VERIFY", `,"to":"` + p256 + `","data":"` + p256Call(t) + `"`},
		{"MODEXP", `,"to":"` + modexp + `","data":"0x` + word(1) + word(3) + word(1) + "02" + "010001" + "65" + `"`},
	}
	for _, tx := range txs {
		_, a := send(t, l1.url, tx.fields)
		hash, b := send(t, op.url, tx.fields)
		if a.Status != 1 || a.Status != b.Status || a.GasUsed != b.GasUsed {
			t.Errorf("%s: L1 status %d gas %d, Karst status %d gas %d", tx.name, a.Status, a.GasUsed, b.Status, b.GasUsed)
		}
		opTxs = append(opTxs, sent{tx.name, hash, b})
	}

	// Calls and estimates: the same answers, except the pairing cap.
	for _, c := range []struct{ name, to, data string }{
		{"CLZ of 1", clz, "0x" + word(1)},
		{"CLZ of 0", clz, "0x" + word(0)},
		{"P256VERIFY", p256, p256Call(t)},
		{"MODEXP over 1024 bytes", modexp, modexpBig},
		{"bn256Pairing 2 pairs", pairing, pairingCall(2)},
	} {
		if a, b := call(t, l1.url, c.to, c.data), call(t, op.url, c.to, c.data); a != b {
			t.Errorf("eth_call %s: L1 %s, Karst %s", c.name, a, b)
		}
		est := `{"jsonrpc":"2.0","id":1,"method":"eth_estimateGas","params":[{"from":"` + dev0 + `","to":"` + c.to + `","data":"` + c.data + `"},"pending"]}`
		if a, b := postRaw(t, l1.url, est), postRaw(t, op.url, est); a != b {
			t.Errorf("eth_estimateGas %s: L1 %s, Karst %s", c.name, a, b)
		}
	}
	if got := call(t, op.url, clz, "0x"+word(1)); !strings.Contains(got, `"result":"0x`+word(255)+`"`) {
		t.Errorf("CLZ of 1 on Karst: %s", got)
	}
	a, b := call(t, l1.url, pairing, pairingCall(301)), call(t, op.url, pairing, pairingCall(301))
	if !strings.Contains(a, `"result":"0x`) || !strings.Contains(b, "bad elliptic curve pairing input size") {
		t.Errorf("301 pairs: L1 %s, Karst %s; want accepted, then refused", a, b)
	}

	// Over the gas cap: refused alike (the pool's error is go-ethereum's);
	// a deposit is exempt.
	over := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"eth_sendTransaction","params":[{"from":"%s","to":"%s","gas":"0x1000001"}]}`, dev0, clz)
	if a, b := postRaw(t, l1.url, over), postRaw(t, op.url, over); a != b || !strings.Contains(a, "transaction gas limit too high (cap: 16777216, tx: 16777217)") {
		t.Errorf("over the cap: L1 %s, Karst %s", a, b)
	}
	hash, dep := send(t, op.url, `,"to":"`+clz+`","input":"0x`+word(8)+`","mint":"0x1","gas":"0x1000001"`)
	if dep.Status != 1 {
		t.Errorf("deposit over the cap: %+v", dep)
	}
	opTxs = append(opTxs, sent{"deposit over the cap", hash, dep})

	// eth_simulateV1 with validation: the same gas and results, the cap alike.
	sim := func(url, calls string) string {
		return postRaw(t, url, `{"jsonrpc":"2.0","id":1,"method":"eth_simulateV1","params":[{"validation":true,"blockStateCalls":[{"calls":[`+calls+`]}]},"pending"]}`)
	}
	type simOut struct {
		Result []struct {
			Calls []struct {
				ReturnData hexutil.Bytes  `json:"returnData"`
				GasUsed    hexutil.Uint64 `json:"gasUsed"`
				Status     hexutil.Uint64 `json:"status"`
			} `json:"calls"`
		} `json:"result"`
		Error *struct{ Message string } `json:"error"`
	}
	nonce := func(url string) string {
		return post(t, url, `{"jsonrpc":"2.0","id":1,"method":"eth_getTransactionCount","params":["`+dev0+`","pending"]}`)
	}
	// The second call is over the gas cap: go-ethereum's simulation does not
	// apply it (its messages skip transaction checks, validation or not).
	input := p256Call(t)
	calls := func(url string) string {
		n := nonce(url)
		return fmt.Sprintf(`{"from":"%s","to":"%s","input":"0x%s","nonce":%s,"maxFeePerGas":"0x3b9aca000"},{"from":"%s","to":"%s","input":"%s","gas":"0x1000001","maxFeePerGas":"0x3b9aca000"}`,
			dev0, clz, word(1<<40), n, dev0, p256, input)
	}
	var sa, sb simOut
	json.Unmarshal([]byte(sim(l1.url, calls(l1.url))), &sa)
	json.Unmarshal([]byte(sim(op.url, calls(op.url))), &sb)
	if sa.Error != nil || sb.Error != nil || len(sa.Result) != 1 || len(sb.Result) != 1 || len(sa.Result[0].Calls) != 2 {
		t.Fatalf("eth_simulateV1: L1 %+v, Karst %+v", sa, sb)
	}
	for i := range sa.Result[0].Calls {
		x, y := sa.Result[0].Calls[i], sb.Result[0].Calls[i]
		if x.Status != 1 || x.Status != y.Status || x.GasUsed != y.GasUsed || !bytes.Equal(x.ReturnData, y.ReturnData) {
			t.Errorf("eth_simulateV1 call %d: L1 %+v, Karst %+v", i, x, y)
		}
	}
	if got := sb.Result[0].Calls[0].ReturnData; !bytes.Equal(got, common.FromHex(word(215))) {
		t.Errorf("CLZ of 2^40 simulated on Karst: %x", got)
	}

	// The follower: the same receipts, pre-confirmed and sealed, and the
	// same simulation.
	for _, tx := range opTxs {
		body := `{"jsonrpc":"2.0","id":1,"method":"eth_getTransactionReceipt","params":[` + tx.hash + `]}`
		deadline := time.Now().Add(30 * time.Second)
		for {
			got, want := postRaw(t, fol.url, body), postRaw(t, op.url, body)
			if got == want && !strings.Contains(got, `"result":null`) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: follower %s\nsequencer %s\n%s", tx.name, got, want, fol.out.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	simLatest := `{"jsonrpc":"2.0","id":1,"method":"eth_simulateV1","params":[{"blockStateCalls":[{"calls":[{"from":"` + dev0 + `","to":"` + clz + `","input":"0x` + word(3) + `"},{"from":"` + dev0 + `","to":"` + p256 + `","input":"` + p256Call(t) + `"}]}]},"latest"]}`
	if a, b := postRaw(t, op.url, simLatest), postRaw(t, fol.url, simLatest); a != b || strings.Contains(a, "error") {
		t.Errorf("eth_simulateV1 at latest: sequencer %s, follower %s", a, b)
	}
	var st struct {
		Counters map[string]uint64 `json:"counters"`
	}
	json.Unmarshal([]byte(post(t, fol.url, `{"jsonrpc":"2.0","id":1,"method":"follower_status","params":[]}`)), &st)
	if st.Counters["exec_invalid_flashblocks"] != 0 || st.Counters["block_hash_mismatch"] != 0 || st.Counters["block_hash_match"] == 0 {
		t.Errorf("follower counters %v", st.Counters)
	}
}

// TestForkActivations runs the OP-stack dev chain from Isthmus through
// Jovian and Karst at set times, their upgrade transactions included, and
// a follower of it: every block re-executes with no invalid flashblock and
// no block-hash mismatch; the Karst activation block has room for its
// bundle and the next block's limit is the chain's again; CLZ is an invalid
// opcode before Karst and counts leading zeros from it.
func TestForkActivations(t *testing.T) {
	g, err := chain.DevL2GenesisAt(forkrules.Isthmus)
	if err != nil {
		t.Fatal(err)
	}
	// Far enough ahead that no start-up, however slow, reaches them; the
	// test moves the clock to just before Jovian once its first call is in
	// (evm_increaseTime), so the activations come at the block cadence.
	now := uint64(time.Now().Unix())
	jovian, karst := now+3600, now+3608
	g.Config.JovianTime, g.Config.KarstTime = &jovian, &karst
	raw, err := json.Marshal(g)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "genesis.json")
	if err := os.WriteFile(file, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	seq := start(t, "--genesis", file, "--datadir", t.TempDir(), "--block-time", "1s")
	defer seq.stop(t)
	ws := "ws" + strings.TrimPrefix(seq.url, "http") + "/flashblocks"
	fol := start(t, "follow", "--genesis", file, "--upstream", seq.url, "--flashblocks", ws, "--datadir", t.TempDir(), "--upstream.poll", "20ms")
	defer fol.stop(t)

	_, dep := send(t, seq.url, `,"data":"`+clzInit+`"`)
	if dep.ContractAddress == nil {
		t.Fatalf("CLZ probe not deployed: %+v", dep)
	}
	clz := dep.ContractAddress.Hex()
	type header struct {
		Number    hexutil.Uint64 `json:"number"`
		Time      hexutil.Uint64 `json:"timestamp"`
		GasLimit  hexutil.Uint64 `json:"gasLimit"`
		Hash      common.Hash    `json:"hash"`
		ExtraData hexutil.Bytes  `json:"extraData"`
		Txs       []string       `json:"transactions"`
	}
	block := func(url string, n uint64) *header {
		var h *header
		json.Unmarshal([]byte(post(t, url, fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"eth_getBlockByNumber","params":["0x%x",false]}`, n))), &h)
		return h
	}
	var before, after []string // CLZ calls sent before Jovian and after Karst
	deadline := time.Now().Add(90 * time.Second)
	for {
		head := block(seq.url, hexNum(t, post(t, seq.url, `{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}`)))
		switch {
		case uint64(head.Time)+2 < jovian && len(before) == 0:
			h, _ := send(t, seq.url, `,"to":"`+clz+`","data":"0x`+word(1)+`","gas":"0x10000"`)
			before = append(before, h)
			// The open block's time, the clock's (the head may still be
			// the genesis, whose time is the registry's). Only the time:
			// a pending block's hash is null.
			var at struct {
				Time hexutil.Uint64 `json:"timestamp"`
			}
			if err := json.Unmarshal([]byte(post(t, seq.url, `{"jsonrpc":"2.0","id":1,"method":"eth_getBlockByNumber","params":["pending",false]}`)), &at); err != nil || at.Time == 0 {
				t.Fatalf("pending block's time %d: %v", at.Time, err)
			}
			if gap := int64(jovian) - 3 - int64(at.Time); gap > 0 {
				post(t, seq.url, fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"evm_increaseTime","params":[%d]}`, gap))
			}
			continue
		case uint64(head.Time) > karst+1 && len(after) == 0:
			h, _ := send(t, seq.url, `,"to":"`+clz+`","data":"0x`+word(1)+`","gas":"0x10000"`)
			after = append(after, h)
		case uint64(head.Time) > karst+3:
		default:
			send(t, seq.url, `,"to":"0x000000000000000000000000000000000000aa00","value":"0x1"`) // traffic for the flashblocks
			continue
		}
		if uint64(head.Time) > karst+3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the chain did not pass Karst (head %d at %d): %s", head.Number, head.Time, seq.out.String())
		}
	}
	if len(before) == 0 || len(after) == 0 {
		t.Fatal("the chain moved past Jovian before a call could be sent: start sooner")
	}
	if r := waitReceipt(t, seq.url, before[0]); r.Status != 0 {
		t.Errorf("CLZ before Karst: status %d, want an invalid opcode", r.Status)
	}
	if r := waitReceipt(t, seq.url, after[0]); r.Status != 1 {
		t.Errorf("CLZ at Karst: status %d", r.Status)
	}

	// The activation blocks, and every block the follower's alike.
	head := hexNum(t, post(t, seq.url, `{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}`))
	var jovianBlock, karstBlock *header
	var prev *header
	for n := uint64(1); n <= head; n++ {
		h := block(seq.url, n)
		deadline := time.Now().Add(30 * time.Second)
		for f := block(fol.url, n); f == nil || f.Hash != h.Hash; f = block(fol.url, n) {
			if time.Now().After(deadline) {
				t.Fatalf("block %d: follower %+v, sequencer %+v", n, f, h)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if uint64(h.Time) >= jovian && jovianBlock == nil {
			jovianBlock = h
		}
		if uint64(h.Time) >= karst && karstBlock == nil {
			karstBlock = h
		} else if karstBlock != nil && prev == karstBlock && h.GasLimit != karstBlock.GasLimit-55_370_657 {
			t.Errorf("block %d after Karst's: gas limit %d", n, h.GasLimit)
		}
		prev = h
	}
	if jovianBlock == nil || len(jovianBlock.Txs) != 1+5 || len(jovianBlock.ExtraData) != 17 {
		t.Errorf("Jovian's activation block: %+v", jovianBlock)
	}
	if karstBlock == nil || len(karstBlock.Txs) != 1+31 || karstBlock.GasLimit != 150_000_000+55_370_657 {
		t.Errorf("Karst's activation block: %+v", karstBlock)
	}
	var st struct {
		Counters map[string]uint64 `json:"counters"`
	}
	json.Unmarshal([]byte(post(t, fol.url, `{"jsonrpc":"2.0","id":1,"method":"follower_status","params":[]}`)), &st)
	if st.Counters["exec_invalid_flashblocks"] != 0 || st.Counters["block_hash_mismatch"] != 0 || st.Counters["block_hash_match"] < head/2 {
		t.Errorf("follower counters %v over %d blocks", st.Counters, head)
	}
}

func hexNum(t *testing.T, s string) uint64 {
	var n hexutil.Uint64
	if err := json.Unmarshal([]byte(s), &n); err != nil {
		t.Fatal(err)
	}
	return uint64(n)
}
