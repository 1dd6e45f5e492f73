package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/preconf/preconf/bench/internal/load"
	"github.com/preconf/preconf/internal/peers"
)

// Ports: everything the harness opens is in 48545-48560.
const (
	PortPreconf  = 48545
	PortAnvil    = 48546
	PortGeth     = 48547
	portGethAuth = 48548
	portGethP2P  = 48549
	PortPprof    = 48550
	PortBase     = 48551 // preconf-base
)

// Kind knows how to install and start one node.
type Kind struct {
	Name string
	Port int
	// Extra are other ports the node listens on.
	Extra []int
	// install returns the binary, building or downloading it when missing.
	Install func(env *Env) (string, error)
	// args are the command line for a fresh data dir with the shared genesis.
	// prepare, if set, runs first (geth init).
	Prepare func(env *Env, bin, dir string) error
	Args    func(env *Env, dir string) []string
	// Dir, if set, is an existing data dir used instead of a fresh one.
	Dir string
	// Ready, if set, is a path that answers 200 once the node serves at
	// full speed (preconf's /readyz: 503 while its state snapshot is
	// generated again after an unclean stop); startNode waits for it.
	Ready string
}

// Env is what node kinds share.
type Env struct {
	Repo    string // repository root (for building preconf)
	Cache   string // install cache
	Work    string // this run's scratch dir
	Genesis string // shared genesis file
	Install bool   // install missing peers
	Pprof   bool   // start preconf with its pprof listener
	// sequencer runs preconf with its default block production (2 s
	// blocks, 200 ms flashblocks): pending reads then hit live snapshots.
	Sequencer bool
	// baseRepo is the checkout preconf-base is built from (-preconf-base).
	BaseRepo string
	// nodeCPUs, when set, is the CPU list nodes run on (-pin).
	NodeCPUs string
	Log      io.Writer
}

// BuildPreconf builds cmd/preconf of the checkout at repo into bin.
func BuildPreconf(e *Env, repo, bin string) (string, error) {
	fmt.Fprintf(e.Log, "building %s (go build -o %s ./cmd/preconf in %s)\n", filepath.Base(bin), bin, repo)
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/preconf")
	cmd.Dir = repo
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/preconf in %s: %v\n%s", repo, err, out)
	}
	return bin, nil
}

// preconfArgs are a preconf node's command line on port.
func preconfArgs(e *Env, dir string, port int, pprof bool) []string {
	a := []string{"--datadir", dir, "--genesis", e.Genesis,
		"--http.addr", "127.0.0.1", "--http.port", strconv.Itoa(port), "--log.level", "warn"}
	if !e.Sequencer {
		// No blocks, no pending snapshot: "pending" reads resolve
		// to the genesis state, as on the peers.
		a = append(a, "--no-sequencer")
	}
	if pprof {
		a = append(a, "--pprof", "--pprof.addr", fmt.Sprintf("127.0.0.1:%d", PortPprof))
	}
	return a
}

var Kinds = map[string]Kind{
	"preconf": {
		Name: "preconf", Port: PortPreconf,
		Install: func(e *Env) (string, error) { return BuildPreconf(e, e.Repo, filepath.Join(e.Work, "preconf")) },
		Args:    func(e *Env, dir string) []string { return preconfArgs(e, dir, PortPreconf, e.Pprof) },
	},
	// preconf-base is preconf built from another checkout (-preconf-base),
	// e.g. main before a change: the ratio preconf/preconf-base is then a
	// before/after comparison measured in one run.
	"preconf-base": {
		Name: "preconf-base", Port: PortBase,
		Install: func(e *Env) (string, error) {
			if e.BaseRepo == "" {
				return "", errors.New("preconf-base needs -preconf-base DIR (the checkout to build it from)")
			}
			return BuildPreconf(e, e.BaseRepo, filepath.Join(e.Work, "preconf-base"))
		},
		Args: func(e *Env, dir string) []string { return preconfArgs(e, dir, PortBase, false) },
	},
	"anvil": {
		Name: "anvil", Port: PortAnvil,
		Install: func(e *Env) (string, error) { return WithHint(peers.Anvil(e.Cache, e.Install, e.Log)) },
		Args: func(e *Env, dir string) []string {
			// Anvil logs every call by default; its output goes to a file
			// here, like the other nodes'. No blocks are mined without
			// transactions (automine), so the state stays the genesis.
			return []string{"--init", e.Genesis, "--host", "127.0.0.1", "--port", strconv.Itoa(PortAnvil)}
		},
	},
	"geth": {
		Name: "geth", Port: PortGeth, Extra: []int{portGethAuth, portGethP2P},
		Install: func(e *Env) (string, error) { return WithHint(peers.Geth(e.Cache, e.Install, e.Log)) },
		Prepare: func(e *Env, bin, dir string) error {
			cmd := exec.Command(bin, "--datadir", dir, "--state.scheme", "path", "init", e.Genesis)
			if out, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("geth init: %v\n%s", err, out)
			}
			return nil
		},
		Args: func(e *Env, dir string) []string {
			// A full node over the shared genesis with no peers and no
			// consensus client: it serves the genesis state and never
			// advances, which is all the read workloads need.
			return []string{"--datadir", dir, "--state.scheme", "path", "--syncmode", "full",
				"--nodiscover", "--maxpeers", "0", "--port", strconv.Itoa(portGethP2P), "--ipcdisable",
				"--http", "--http.addr", "127.0.0.1", "--http.port", strconv.Itoa(PortGeth), "--http.api", "eth,net,web3",
				"--authrpc.addr", "127.0.0.1", "--authrpc.port", strconv.Itoa(portGethAuth),
				"--verbosity", "2"}
		},
	},
}

// WithHint adds to a missing peer's error how to get it installed.
func WithHint(bin string, err error) (string, error) {
	if err != nil && strings.Contains(err.Error(), "not installed") {
		err = fmt.Errorf("%w (run without -no-install)", err)
	}
	return bin, err
}

// waitPortsFree waits until every port can be bound on 127.0.0.1: the
// machine's ephemeral range covers the harness's ports, so a client socket
// (ours or anyone's) may briefly hold one.
func waitPortsFree(ports []int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for _, p := range ports {
		for {
			ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
			if err == nil {
				ln.Close()
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("port %d stays busy: %w", p, err)
			}
			time.Sleep(250 * time.Millisecond)
		}
	}
	return nil
}

// Node is a started node process.
type Node struct {
	Kind Kind
	Cmd  *exec.Cmd
	Addr string
	done chan struct{}
	err  error // set when the process exits
	logf *os.File
	// startup is the time from the process's start to its first answer
	// (eth_chainId, polled every 20 ms); ready, to its Ready path
	// answering 200 (startup when the kind has none).
	Startup, UntilReady time.Duration
}

// StartNode starts kind from a fresh data dir and waits until it answers.
func StartNode(e *Env, kind Kind, bin string, round int) (*Node, error) {
	dir := kind.Dir
	if dir == "" {
		dir = filepath.Join(e.Work, fmt.Sprintf("%s-data-%d", kind.Name, round))
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if kind.Prepare != nil {
		if err := kind.Prepare(e, bin, dir); err != nil {
			return nil, err
		}
	}
	ports := append([]int{kind.Port}, kind.Extra...)
	if kind.Name == "preconf" && e.Pprof {
		ports = append(ports, PortPprof)
	}
	if err := waitPortsFree(ports, 90*time.Second); err != nil {
		return nil, fmt.Errorf("%s: %w", kind.Name, err)
	}
	logPath := filepath.Join(e.Work, fmt.Sprintf("%s-%d.log", kind.Name, round))
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := PinnedCommand(e.NodeCPUs, bin, kind.Args(e, dir))
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", kind.Name, err)
	}
	started := time.Now()
	n := &Node{Kind: kind, Cmd: cmd, Addr: fmt.Sprintf("127.0.0.1:%d", kind.Port), done: make(chan struct{}), logf: logf}
	go func() {
		n.err = cmd.Wait()
		close(n.done)
	}()
	deadline := time.Now().Add(90 * time.Second)
	for {
		if _, err := RPCCall(n.Addr, "eth_chainId"); err == nil {
			n.Startup = time.Since(started)
			if err := n.waitReady(started, readyTimeout); err != nil {
				n.Stop()
				return nil, fmt.Errorf("%s: %w; log: %s", kind.Name, err, logPath)
			}
			return n, nil
		}
		select {
		case <-n.done:
			logf.Close()
			return nil, fmt.Errorf("%s exited during start-up (%v); log: %s\n%s", kind.Name, n.err, logPath, Tail(logPath))
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			n.Stop()
			return nil, fmt.Errorf("%s did not answer on %s within 90s; log: %s\n%s", kind.Name, n.Addr, logPath, Tail(logPath))
		}
	}
}

// readyTimeout bounds the wait for a node's Ready path: a snapshot
// generation of the million-account bench state took ~30 s here.
const readyTimeout = 10 * time.Minute

// waitReady polls the kind's Ready path every 100 ms until it answers 200
// and sets n.ready (n.startup without one).
func (n *Node) waitReady(started time.Time, timeout time.Duration) error {
	n.UntilReady = n.Startup
	if n.Kind.Ready == "" {
		return nil
	}
	deadline := time.Now().Add(timeout)
	for {
		resp, err := ProbeClient.Get("http://" + n.Addr + n.Kind.Ready)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				n.UntilReady = time.Since(started)
				return nil
			}
		}
		select {
		case <-n.done:
			return fmt.Errorf("exited before %s answered 200 (%v)", n.Kind.Ready, n.err)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not 200 within %s", n.Kind.Ready, timeout)
		}
	}
}

// Stop ends the node's process group (SIGTERM, then SIGKILL after 15 s).
func (n *Node) Stop() {
	defer n.logf.Close()
	pgid := n.Cmd.Process.Pid
	syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-n.done:
	case <-time.After(15 * time.Second):
		syscall.Kill(-pgid, syscall.SIGKILL)
		<-n.done
	}
}

// Load runs cfg against the node and adds the node's CPU time per answered
// request (ServerCPU, left 0 when /proc cannot tell).
func (n *Node) Load(cfg load.Config) (load.Result, error) {
	cpu0, ok0 := n.CPUTime()
	res, err := load.Run(cfg)
	if cpu1, ok1 := n.CPUTime(); ok0 && ok1 && err == nil && res.Requests > 0 {
		res.ServerCPU = (cpu1 - cpu0) / time.Duration(res.Requests)
	}
	return res, err
}

// CPUTime is the CPU time (user + system, all threads) the node's process
// has used, from /proc (Linux; 10 ms resolution).
func (n *Node) CPUTime() (time.Duration, bool) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", n.Cmd.Process.Pid))
	if err != nil {
		return 0, false
	}
	// Fields after the command name (which may hold spaces) start at ") ".
	i := bytes.LastIndexByte(raw, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(raw[i+1:]))
	if len(f) < 13 {
		return 0, false
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	const clkTck = 100 // USER_HZ on Linux
	return time.Duration(utime+stime) * time.Second / clkTck, true
}

// Version asks the node for web3_clientVersion.
func (n *Node) Version() string {
	raw, err := RPCCall(n.Addr, "web3_clientVersion")
	if err != nil {
		return "?"
	}
	var s string
	json.Unmarshal(raw, &s)
	return s
}

// ProbeClient keeps no idle connections: an idle client socket would hold
// an ephemeral port, possibly one a node is about to listen on.
var ProbeClient = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

// RPCCall makes one JSON-RPC call and returns its result.
func RPCCall(addr, method string, params ...any) (json.RawMessage, error) {
	body := load.Encode(load.NewCall(1, method, params...))
	raw, err := Post(addr, body)
	if err != nil {
		return nil, err
	}
	var resp struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(raw, &resp); err != nil {
		return nil, fmt.Errorf("%s: bad answer %.200s", method, raw)
	}
	if resp.Error != nil {
		return nil, fmt.Errorf("%s: %s", method, resp.Error.Message)
	}
	return resp.Result, nil
}

// Post sends one body with net/http (set-up and checks, not load).
func Post(addr string, body []byte) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := ProbeClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP %d: %.200s", resp.StatusCode, raw)
	}
	return raw, nil
}

// Tail is the end of a log file, for start-up failures.
func Tail(path string) string {
	raw, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	if len(raw) > 2000 {
		raw = raw[len(raw)-2000:]
	}
	return strings.TrimSpace(string(raw))
}

// RSS is the process's resident set size (bytes), from /proc.
func (n *Node) RSS() int64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", n.Cmd.Process.Pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}
