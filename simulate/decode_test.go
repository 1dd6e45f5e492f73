package simulate

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/preconf/preconf/conformance"
)

// checkSame decodes raw both ways; when the fast decoder accepts, the
// result must be exactly encoding/json's.
func checkSame[T any](t *testing.T, raw string, fast func([]byte, *T) bool) (accepted bool) {
	t.Helper()
	var f, std T
	accepted = fast([]byte(raw), &f)
	err := json.Unmarshal([]byte(raw), &std)
	if !accepted {
		return false
	}
	if err != nil {
		t.Errorf("fast decoder accepted what encoding/json rejects (%v): %s", err, raw)
		return true
	}
	if !reflect.DeepEqual(f, std) {
		t.Errorf("fast decoder differs from encoding/json\n fast %#v\n std  %#v\n input %s", f, std, raw)
	}
	return true
}

func TestFastDecodeMatchesEncodingJSON(t *testing.T) {
	requests := []string{
		`{"blockStateCalls":[]}`,
		`{"blockStateCalls":[{"calls":[]}]}`,
		`{"blockStateCalls":null,"validation":true}`,
		`{"blockStateCalls":[null,{},{"calls":null,"stateOverrides":null,"blockOverrides":null}]}`,
		`{"blockStateCalls":[{"stateOverrides":{"0xc000000000000000000000000000000000000000":{"state":{},"balance":"0x1"}}}]}`,
		`{"blockStateCalls":[{"stateOverrides":{"0xc000000000000000000000000000000000000000":{"stateDiff":{"0x0000000000000000000000000000000000000000000000000000000000000001":"0x0000000000000000000000000000000000000000000000000000000000000002"}}}}]}`,
		`{"blockStateCalls":[{"blockOverrides":{"number":"0x10","time":"0x20","withdrawals":[{"index":"0x0","validatorIndex":"0x1","address":"0xc000000000000000000000000000000000000000","amount":"0x2"}]}}],"traceTransfers":false}`,
		` { "blockStateCalls" : [ { "calls" : [ { "from" : "0xc000000000000000000000000000000000000000" , "value" : "0x1" } ] } ] } `,
		// Outside the subset: encoding/json decides.
		`{"BlockStateCalls":[]}`,
		`{"blockStateCalls":[],"blockStateCalls":[{}]}`,
		`{"blockStateCalls":[{"calls":[{"from":"0xc00000000000000000000000000000000000000\u0030"}]}]}`,
		`{"blockStateCalls":[{"blockOverrides":{"number":16}}]}`,
		`{"blockStateCalls":[],"unknown":1}`,
		`{"blockStateCalls":[{"blockOverrides":{"number":"0x01"}}]}`,
		`{"blockStateCalls":[{"stateOverrides":{"0xc0":{}}}]}`,
		`{"traceTransfers":"yes"}`,
	}
	calls := []string{
		`{}`,
		`{"from":null,"to":null,"gas":null,"input":null}`,
		`{"from":"0xc000000000000000000000000000000000000000","to":"0xc100000000000000000000000000000000000000","gas":"0x5208","gasPrice":"0x1","value":"0x3e8","nonce":"0x0","data":"0x","input":"0x01","chainId":"0x1"}`,
		`{"maxFeePerGas":"0xf","maxPriorityFeePerGas":"0x1","maxFeePerBlobGas":"0x3","blobVersionedHashes":[],"accessList":[{"address":"0xc000000000000000000000000000000000000000","storageKeys":[]}],"type":"0x2"}`,
		`{"authorizationList":[{"address":"0xaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa","chainId":"0x1","nonce":"0x0","r":"0x1","s":"0x2","yParity":"0x0"}],"type":null}`,
		`{"type":4}`,
		`{"From":"0xc000000000000000000000000000000000000000"}`,
		`{"gas":"0x"}`,
		`{"input":"0x0"}`,
	}
	// Every call object and simulate request of the fixtures.
	dir := conformance.Fixtures(t)
	for _, cat := range []string{"eth_simulateV1", "eth_call", "eth_estimateGas", "eth_createAccessList"} {
		files, _ := filepath.Glob(filepath.Join(dir, "tests", cat, "*.io"))
		for _, f := range files {
			for _, req := range fixtureRequests(t, f) {
				if len(req.Params) == 0 {
					continue
				}
				if cat == "eth_simulateV1" {
					requests = append(requests, string(req.Params[0]))
				} else {
					calls = append(calls, string(req.Params[0]))
				}
			}
		}
	}
	fast := 0
	for _, r := range requests {
		if checkSame(t, r, FastRequest) {
			fast++
		}
	}
	for _, c := range calls {
		if checkSame(t, c, FastCallArgs) {
			fast++
		}
	}
	t.Logf("%d of %d inputs took the fast path", fast, len(requests)+len(calls))
	if fast < (len(requests)+len(calls))/2 {
		t.Errorf("only %d of %d inputs took the fast path", fast, len(requests)+len(calls))
	}
}

type fixtureRequest struct {
	Params []json.RawMessage `json:"params"`
}

func fixtureRequests(t *testing.T, path string) []fixtureRequest {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []fixtureRequest
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, ">>") {
			var r fixtureRequest
			if err := json.Unmarshal([]byte(strings.TrimSpace(line[2:])), &r); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			out = append(out, r)
		}
	}
	return out
}
