// Command bench compares preconf with anvil and geth on the same machine, in
// one run, from the same genesis. Each experiment is a sub-command with its
// own flags beside the shared ones (bench/internal/harness.Options):
//
//	go run ./bench                      # compare: 3 rounds × every workload × 3 nodes
//	go run ./bench compare -duration 5s -rounds 5 -conns 64
//	go run ./bench follow               # or follow-defi, writeload, latency, bigstate, evm, suite, tails, shape
//	go run ./bench all -write-docs      # every part; rewrites docs/bench.md's tables
//	go run ./bench install op-geth      # install peers and print their paths
//	go run ./bench help                 # the sub-commands
//
// The flags that chose a mode before sub-commands existed (-all, -follow,
// -writeload, -preconf-latency, -bigstate, -shape, -list, -install) still
// choose it, so older commands in docs/bench.md run as written.
//
// Peers are installed when missing (anvil from npm, geth with go install)
// into a cache; preconf is built from this checkout; every node runs on
// loopback (ports 48545-48560). The command exits non-zero on errors (a
// peer missing, a node failing, wrong or failed answers), never on
// slowness.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/preconf/preconf/bench/internal/harness"
	"github.com/preconf/preconf/bench/internal/report"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is the whole command; the result is the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	cmds := commands()
	name, rest, err := pick(cmds, args)
	if err != nil {
		fmt.Fprintln(stderr, "bench:", err)
		return 2
	}
	if name == "help" {
		usage(cmds, stdout)
		return 0
	}
	c := cmds[slices.IndexFunc(cmds, func(c *command) bool { return c.name == name })]
	fs := flag.NewFlagSet("bench "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var h harness.Options
	var writeDocs bool
	if !c.bare {
		h.AddFlags(fs)
		fs.BoolVar(&writeDocs, "write-docs", false, "replace this command's generated sections of docs/bench.md and README.md with this run's tables")
	}
	if c.flags != nil {
		c.flags(fs)
	}
	if err := fs.Parse(rest); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if !c.bare {
		if err := h.Finish(); err != nil {
			fmt.Fprintln(stderr, "bench:", err)
			return 2
		}
	}
	if c.exec != nil {
		return c.exec(h, fs.Args(), stdout, stderr)
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "bench: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	start := time.Now()
	parts, err := c.run(h, stderr)
	code := 0
	if err != nil {
		fmt.Fprintln(stderr, "bench:", err)
		code = 1
	}
	var sections []report.Section
	for _, p := range parts {
		if p.save != nil {
			if werr := p.save(h.Out, stdout, stderr); werr != nil {
				fmt.Fprintln(stderr, "bench:", werr)
				code = 1
			}
		}
		if p.err != nil {
			fmt.Fprintf(stderr, "bench: %s: %v\n", p.name, p.err)
			code = 1
			continue
		}
		sections = append(sections, p.sections...)
	}
	// A part that failed keeps its old sections; the others are written.
	if writeDocs && len(sections) > 0 {
		if err := writeSections(sections, args, start); err != nil {
			fmt.Fprintln(stderr, "bench:", err)
			return 1
		}
	}
	return code
}

// writeSections rewrites the docs' generated sections under a line with
// this command and its start.
func writeSections(sections []report.Section, args []string, start time.Time) error {
	repo, err := harness.RepoRoot()
	if err != nil {
		return err
	}
	return report.WriteDocs(repo, sections, args, start, time.Since(start))
}

// legacy maps the flags that chose a mode before sub-commands to them.
var legacy = map[string]string{
	"all": "all", "writeload": "writeload", "preconf-latency": "latency", "follow": "follow",
	"bigstate": "bigstate", "shape": "shape", "list": "list", "install": "install",
}

// pick finds the sub-command: the first argument when it names one, else a
// legacy mode flag anywhere (removed from the arguments), else compare.
func pick(cmds []*command, args []string) (string, []string, error) {
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		for _, c := range cmds {
			if c.name == args[0] {
				return c.name, args[1:], nil
			}
		}
		if args[0] == "help" {
			return "help", nil, nil
		}
		return "", nil, fmt.Errorf("unknown command %q (go run ./bench help)", args[0])
	}
	for i, a := range args {
		flagName, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		name, ok := legacy[flagName]
		if !ok || !strings.HasPrefix(a, "-") {
			continue
		}
		rest := slices.Concat(args[:i], args[i+1:])
		if name == "install" {
			// -install a,b: the peers become the command's arguments.
			if !hasValue {
				if i+1 >= len(args) {
					return "", nil, errors.New("-install needs a value")
				}
				value, rest = args[i+1], slices.Concat(args[:i], args[i+2:])
			}
			return name, append(rest, value), nil
		}
		if hasValue && value != "true" {
			continue // -follow=false chose nothing
		}
		return name, rest, nil
	}
	return "compare", args, nil
}

func usage(cmds []*command, w io.Writer) {
	fmt.Fprintln(w, "usage: go run ./bench [command] [flags]   (go run ./bench command -h: its flags)")
	for _, c := range cmds {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.help)
	}
}
