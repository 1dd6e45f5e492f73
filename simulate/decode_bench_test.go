package simulate

import "testing"

// benchSimulate is a typical eth_simulateV1 request: two blocks, a
// balance and a storage override, three calls.
const benchSimulate = `{"blockStateCalls":[{"blockOverrides":{"baseFeePerGas":"0x9","time":"0x6553f100"},` +
	`"stateOverrides":{"0xc000000000000000000000000000000000000000":{"balance":"0x4a817c800"},` +
	`"0xc100000000000000000000000000000000000000":{"stateDiff":{"0x0000000000000000000000000000000000000000000000000000000000000001":"0x0000000000000000000000000000000000000000000000000000000000000002"}}},` +
	`"calls":[{"from":"0xc000000000000000000000000000000000000000","to":"0xc100000000000000000000000000000000000000","value":"0x3e8","maxFeePerGas":"0xf"},` +
	`{"from":"0xc000000000000000000000000000000000000000","to":"0xc100000000000000000000000000000000000000","input":"0xa9059cbb000000000000000000000000c2000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000064","gas":"0x5208"}]},` +
	`{"calls":[{"from":"0xc000000000000000000000000000000000000000","to":"0xc200000000000000000000000000000000000000","data":"0x"}]}],` +
	`"traceTransfers":true,"validation":false,"returnFullTransactions":false}`

// BenchmarkFastRequest: decoding eth_simulateV1's request in the strict
// subset (the rest goes to encoding/json).
func BenchmarkFastRequest(b *testing.B) {
	raw := []byte(benchSimulate)
	b.ReportAllocs()
	for b.Loop() {
		var r Request
		if !FastRequest(raw, &r) {
			b.Fatal("not in the subset")
		}
	}
}
