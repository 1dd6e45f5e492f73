package follower

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/preconf/preconf/chain"
	"github.com/preconf/preconf/pending"
)

// A provider key in the upstream or feed URL never reaches follower_status,
// errors or health reasons: URLs are shown as scheme://host.
func TestStatusRedactsURLs(t *testing.T) {
	f, err := New(Config{Upstream: "http://127.0.0.1:1/v2/SECRETKEY", Feed: "ws://127.0.0.1:2/ws?token=SECRETKEY",
		Chain: chain.DevGenesis().Config}, new(pending.Source))
	if err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	f.headErr = errors.New("upstream unavailable: http://127.0.0.1:1/v2/SECRETKEY: connection refused")
	f.headDown = time.Now().Add(-time.Hour)
	f.started = time.Now().Add(-time.Hour)
	f.mu.Unlock()
	st := f.Status()
	raw, _ := json.Marshal(st)
	reasons := f.Health()
	if strings.Contains(string(raw), "SECRETKEY") || strings.Contains(strings.Join(reasons, " "), "SECRETKEY") {
		t.Fatalf("a URL's secret leaked:\n%s\n%v", raw, reasons)
	}
	if st.Upstream != "http://127.0.0.1:1" || st.Feed != "ws://127.0.0.1:2" {
		t.Fatalf("shown URLs %q %q", st.Upstream, st.Feed)
	}
	if len(reasons) != 2 {
		t.Fatalf("health reasons %v, want the feed and the upstream", reasons)
	}
	_, err = f.forwarder("eth_blockNumber", newLRU[string, json.RawMessage](1))(t.Context(), nil)
	if err == nil || strings.Contains(err.Error(), "SECRETKEY") || !strings.Contains(err.Error(), "http://127.0.0.1:1") {
		t.Fatalf("forwarded call's error: %v", err)
	}
}
