package clients_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/preconf/preconf/chain"
	"github.com/preconf/preconf/internal/peers"
)

// The harness: TestMain builds cmd/preconf once and starts the node most
// tests share, the default dev chain (a block every 2 s, a flashblock every
// 200 ms). Other nodes start on demand (startPreconf): a slow-sealing one
// shared by the scripts that must finish before a seal (slowNode), fresh
// ones for tests that need a new chain. Every node listens on loopback, on
// a free port of 58561-58600, with its own temporary datadir.

var (
	binary string       // the built preconf
	shared *preconfNode // the default node
	setup  error        // why binary or shared is missing
	slow   struct {     // slowNode's
		once sync.Once
		n    *preconfNode
		err  error
	}
	tmpRoot string
)

func TestMain(m *testing.M) {
	code := func() int {
		var err error
		if tmpRoot, err = os.MkdirTemp("", "preconf-clients-"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(tmpRoot)
		binary = filepath.Join(tmpRoot, "preconf")
		build := exec.Command("go", "build", "-o", binary, "./cmd/preconf")
		build.Dir = repoRoot()
		if out, err := build.CombinedOutput(); err != nil {
			setup = fmt.Errorf("build preconf: %v\n%s", err, out)
		} else if shared, setup = startPreconf(); shared != nil {
			defer shared.stop()
		}
		defer func() {
			if slow.n != nil {
				slow.n.stop()
			}
		}()
		return m.Run()
	}()
	os.Exit(code)
}

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// preconfNode is a running preconf process.
type preconfNode struct {
	http, ws string
	cmd      *exec.Cmd
	exited   chan struct{}
	logs     bytes.Buffer // read only after exit
}

var ports struct {
	sync.Mutex
	next int
}

// startPreconf runs the built binary on a new datadir with extra flags and
// waits until it is healthy.
func startPreconf(args ...string) (*preconfNode, error) {
	if binary == "" {
		return nil, fmt.Errorf("no preconf binary")
	}
	dir, err := os.MkdirTemp(tmpRoot, "data-")
	if err != nil {
		return nil, err
	}
	ports.Lock()
	defer ports.Unlock()
	for range 40 {
		port := 58561 + ports.next%40
		ports.next++
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			continue
		}
		ln.Close()
		n := &preconfNode{http: "http://127.0.0.1:" + strconv.Itoa(port), ws: "ws://127.0.0.1:" + strconv.Itoa(port), exited: make(chan struct{})}
		n.cmd = exec.Command(binary, append([]string{"--datadir", dir, "--http.port", strconv.Itoa(port), "--log.level", "warn"}, args...)...)
		n.cmd.Stdout, n.cmd.Stderr = &n.logs, &n.logs
		if err := n.cmd.Start(); err != nil {
			return nil, err
		}
		go func() { n.cmd.Wait(); close(n.exited) }()
		if n.waitHealthy() {
			return n, nil
		}
		n.cmd.Process.Kill()
		<-n.exited
		if !strings.Contains(n.logs.String(), "address already in use") {
			return nil, fmt.Errorf("preconf %v did not become healthy:\n%s", args, n.logs.String())
		}
	}
	return nil, fmt.Errorf("no free port in 58561-58600")
}

func (n *preconfNode) waitHealthy() bool {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-n.exited:
			return false
		default:
		}
		if resp, err := http.Get(n.http + "/health"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return true
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return false
}

func (n *preconfNode) stop() {
	n.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-n.exited:
	case <-time.After(20 * time.Second):
		n.cmd.Process.Kill()
		<-n.exited
	}
}

// needNode returns the shared node.
func needNode(t *testing.T) *preconfNode {
	t.Helper()
	if setup != nil {
		t.Fatal(setup)
	}
	return shared
}

// slowNode is a node that pre-confirms every 200 ms but seals a block only
// every 10 minutes, or when evm_mine asks: a script that starts with
// evm_mine runs entirely before the next seal, whatever the machine's load.
func slowNode(t *testing.T) *preconfNode {
	t.Helper()
	needNode(t)
	slow.once.Do(func() { slow.n, slow.err = startPreconf("--block-time", "10m") })
	if slow.err != nil {
		t.Fatal(slow.err)
	}
	return slow.n
}

// tool returns an installed tool's path; missing tooling skips the test,
// except under CI, where it fails.
func tool(t *testing.T, path, what string) string {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		peers.Missing(t, fmt.Sprintf("%s not installed (%s): run scripts/setup-clients", what, path))
	}
	return path
}

func castBin(t *testing.T) string {
	t.Helper()
	return tool(t, filepath.Join(repoRoot(), "tests/clients/node_modules/@foundry-rs/cast-linux-amd64/bin/cast"), "cast")
}

func devKey(i int) string { return "0x" + chain.DevKeys[i] }

func run(t *testing.T, name string, args []string, env ...string) string {
	t.Helper()
	out, err := runErr(t, name, args, env...)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, out)
	}
	return out
}

// runErr runs a tool in tests/clients and returns its combined output.
func runErr(t *testing.T, name string, args []string, env ...string) (string, error) {
	t.Helper()
	return runIn(t, filepath.Join(repoRoot(), "tests", "clients"), name, args, env...)
}

// runIn runs a tool in dir (at most five minutes) and returns its combined
// output.
func runIn(t *testing.T, dir, name string, args []string, env ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// nodeTests runs JavaScript test files under Node's test runner against n;
// keys maps a client name to the dev key its script sends from
// (PRECONF_KEY_<NAME>).
func nodeTests(t *testing.T, n *preconfNode, files []string, keys map[string]int) {
	t.Helper()
	nodeBin, err := peers.Node(repoRoot())
	if err != nil {
		peers.Missing(t, err.Error())
	}
	for _, p := range []string{"viem", "ethers", "web3", "@uniswap/v2-core"} {
		tool(t, filepath.Join(repoRoot(), "tests/clients/node_modules", p, "package.json"), p)
	}
	env := []string{"PRECONF_HTTP_URL=" + n.http, "PRECONF_WS_URL=" + n.ws, "PRECONF_CHAIN_ID=" + strconv.Itoa(chain.DevChainID)}
	for name, i := range keys {
		env = append(env, "PRECONF_KEY_"+name+"="+devKey(i))
	}
	args := append([]string{"--test", "--test-concurrency=1", "--test-reporter=spec"}, files...)
	out, err := runErr(t, nodeBin, args, env...)
	t.Logf("node --test %s:\n%s", strings.Join(files, " "), out)
	if err != nil {
		t.Fatalf("node --test %s: %v", strings.Join(files, " "), err)
	}
}
