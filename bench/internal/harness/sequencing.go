package harness

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/ethereum/go-ethereum/common/hexutil"
)

// SequencingNode builds preconf and starts it with its sequencer (2 s
// blocks, 200 ms flashblocks) in a fresh scratch dir named by prefix; stop
// ends the node and removes the dir.
func SequencingNode(o Options, log io.Writer, prefix string) (e *Env, bin string, n *Node, stop func(), err error) {
	return SequencingNodeWith(o, log, prefix, WriteGenesis)
}

// SequencingNodeWith is sequencingNode with the genesis file written by gen.
func SequencingNodeWith(o Options, log io.Writer, prefix string, gen func(path string) error) (e *Env, bin string, n *Node, stop func(), err error) {
	repo, err := RepoRoot()
	if err != nil {
		return nil, "", nil, nil, err
	}
	work, err := os.MkdirTemp("", prefix)
	if err != nil {
		return nil, "", nil, nil, err
	}
	fail := func(err error) (*Env, string, *Node, func(), error) {
		os.RemoveAll(work)
		return nil, "", nil, nil, err
	}
	e = &Env{Repo: repo, Cache: o.Cache, Work: work, Genesis: filepath.Join(work, "genesis.json"), Sequencer: true, Pprof: o.Profile, Log: log}
	if err := gen(e.Genesis); err != nil {
		return fail(err)
	}
	kind := Kinds["preconf"]
	if bin, err = kind.Install(e); err != nil {
		return fail(err)
	}
	if n, err = StartNode(e, kind, bin, 0); err != nil {
		return fail(err)
	}
	if o.Keep {
		fmt.Fprintf(log, "scratch dir (kept): %s\n", work)
		return e, bin, n, n.Stop, nil
	}
	return e, bin, n, func() { n.Stop(); os.RemoveAll(work) }, nil
}

// WaitPoolEmpty waits until the sequencer's pool is empty.
func WaitPoolEmpty(addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		raw, err := RPCCall(addr, "txpool_status")
		if err != nil {
			return err
		}
		var st struct{ Pending, Queued hexutil.Uint }
		if err := json.Unmarshal(raw, &st); err != nil {
			return fmt.Errorf("txpool_status: %w", err)
		}
		if st.Pending+st.Queued == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the pool still holds %d transactions after %s", st.Pending+st.Queued, timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
