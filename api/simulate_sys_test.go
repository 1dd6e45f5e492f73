package api

import (
	"fmt"
	"math/big"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/params"

	"github.com/preconf/preconf/simulate"
)

// Test contracts reading the system contracts (installed by state overrides).
var (
	// beaconProbe and historyProbe STATICCALL the beacon-roots / history
	// contract with their 32-byte calldata and return three words: the
	// argument, the contract's answer and whether it succeeded.
	beaconProbe  = common.HexToAddress("0x00000000000000000000000000000000000e0101")
	historyProbe = common.HexToAddress("0x00000000000000000000000000000000000e0102")
	// revertingProbe CALLs beaconProbe with its calldata, then reverts.
	revertingProbe = common.HexToAddress("0x00000000000000000000000000000000000e0103")
	// outerProbe CALLs revertingProbe, then beaconProbe, with its calldata,
	// and returns beaconProbe's answer.
	outerProbe = common.HexToAddress("0x00000000000000000000000000000000000e0104")
)

// forwardCode: mem[0] = calldata word; STATICCALL(gas, target, 0, 32, 32,
// 32); mem[64] = success; RETURN(0, 96).
func forwardCode(target common.Address) string {
	return "600035600052" + "6020602060206000" + "73" + addrHex(target) + "5afa" + "604052" + "60606000f3"
}

// callCode: mem[0] = calldata word; CALL(gas, target, 0, 0, 32, 0, out);
// then the tail.
func callCode(target common.Address, out int, tail string) string {
	return "600035600052" + fmt.Sprintf("60%02x", out) + "6000602060006000" + "73" + addrHex(target) + "5af150" + tail
}

func addrHex(a common.Address) string { return strings.ToLower(a.Hex()[2:]) }

func word32(v uint64) string { return common.BigToHash(new(big.Int).SetUint64(v)).Hex() }

// In zero-root mode the beacon-roots and history writes of each block are
// held back until a call could read them (simulate/sysdefer.go). Every way
// of reading them must answer as running the system contracts in the EVM
// does: reads from later blocks, reads after a nested or a whole-call
// revert undid the write, writes by the system address, and state overrides
// of the contracts.
func TestDeferredSystemWrites(t *testing.T) {
	e := newPendingEnv(t, simulate.RootZero)
	n, t0 := e.parent.Number.Uint64(), e.header.Time+100
	times := [3]uint64{t0, t0 + 10, t0 + 20}
	roots := [3]string{word32(0xb1), word32(0xb2), word32(0xb3)}
	from := "0x00000000000000000000000000000000000c0000"
	probe := func(to common.Address, arg uint64) string {
		return `{"from":"` + from + `","to":"` + to.Hex() + `","input":"` + word32(arg) + `"}`
	}
	system := func(to common.Address, input string) string {
		return `{"from":"` + params.SystemAddress.Hex() + `","to":"` + to.Hex() + `","input":"` + input + `"}`
	}
	codes := `"` + beaconProbe.Hex() + `":{"code":"0x` + forwardCode(params.BeaconRootsAddress) + `"},` +
		`"` + historyProbe.Hex() + `":{"code":"0x` + forwardCode(params.HistoryStorageAddress) + `"},` +
		`"` + revertingProbe.Hex() + `":{"code":"0x` + callCode(beaconProbe, 0, "60006000fd") + `"},` +
		`"` + outerProbe.Hex() + `":{"code":"0x` + callCode(revertingProbe, 0, "") + callCode(beaconProbe, 0x60, "60606000f3")[12:] + `"}`
	block := func(i int, overrides string, calls ...string) string {
		b := `{"blockOverrides":{"time":"` + fmt.Sprintf("%#x", times[i]) + `","beaconRoot":"` + roots[i] + `"}`
		if i == 0 {
			overrides = codes + map[bool]string{true: "", false: ","}[overrides == ""] + overrides
		}
		if overrides != "" {
			b += `,"stateOverrides":{` + overrides + `}`
		}
		return b + `,"calls":[` + strings.Join(calls, ",") + `]}`
	}
	ringSlot := func(ts uint64) string { return word32(ts%8191 + 8191) }
	requests := []string{
		// plain reads: this block's and the last block's roots and hashes
		block(0, "") + "," + block(1, "", probe(beaconProbe, times[1]), probe(beaconProbe, times[0]), probe(historyProbe, n+1)) + "," +
			block(2, "", probe(beaconProbe, times[1]), probe(beaconProbe, times[2]), probe(historyProbe, n+2), probe(historyProbe, n+1)),
		// held through a block nothing reads in
		block(0, "") + "," + block(1, "") + "," + block(2, "", probe(beaconProbe, times[1]), probe(historyProbe, n+1)),
		// a nested frame reads and reverts, then the outer frame reads; a
		// whole call reads and reverts, then the next call reads
		block(0, "") + "," + block(1, "", probe(outerProbe, times[1])) + "," +
			block(2, "", probe(revertingProbe, times[2]), probe(beaconProbe, times[2]), probe(outerProbe, times[1])),
		// the system address writes into the contracts
		block(0, "") + "," + block(1, "", system(params.BeaconRootsAddress, word32(0xee)), probe(beaconProbe, times[1])) + "," +
			block(2, "", probe(beaconProbe, times[1]), system(params.HistoryStorageAddress, word32(0xef)), probe(historyProbe, n+2)),
		// overrides of the contracts' storage
		block(0, "") + "," + block(1, "") + "," +
			block(2, `"`+params.BeaconRootsAddress.Hex()+`":{"stateDiff":{"`+ringSlot(times[1])+`":"`+word32(0xdd)+`"}},`+
				`"`+params.HistoryStorageAddress.Hex()+`":{"state":{}}`,
				probe(beaconProbe, times[1]), probe(beaconProbe, times[2]), probe(historyProbe, n+1)),
		// code at the system address calls the beacon-roots contract as the system
		block(0, "") + "," + block(1, `"`+params.SystemAddress.Hex()+`":{"code":"0x`+callCode(params.BeaconRootsAddress, 0, "00")+`"}`,
			probe(params.SystemAddress, 0xcc), probe(beaconProbe, times[1])) + "," +
			block(2, "", probe(beaconProbe, times[1]), probe(params.SystemAddress, 0xcd), probe(beaconProbe, times[2])),
	}
	// What each request must show (the test is not vacuous).
	want := []string{roots[1][2:], roots[1][2:], roots[1][2:], word32(0xee)[2:], word32(0xdd)[2:], word32(0xcd)[2:]}
	for _, ref := range []string{`"latest"`, `"pending"`} {
		for i, r := range requests {
			req := `{"blockStateCalls":[` + r + `]}`
			var answers [2]string
			for j, evm := range []bool{false, true} {
				opts := simulate.DefaultOptions()
				opts.EVMSystemCalls = evm
				e.api.setSimulateOptions(opts)
				answers[j] = mustCall(t, e.api.simulateV1, req, ref)
			}
			if answers[0] != answers[1] {
				t.Errorf("%s request %d: deferred system writes differ from the EVM's\ndeferred %s\nevm      %s", ref, i, answers[0], answers[1])
			}
			if !strings.Contains(answers[0], want[i]) {
				t.Errorf("%s request %d: answer lacks %s: %.2000s", ref, i, want[i], answers[0])
			}
		}
	}
}
