package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/preconf/preconf/anvil"
	"github.com/preconf/preconf/node"
)

// State files in anvil's format (anvil.LoadStateFile, anvil.DumpStateFile).
var stateFlags = []cli.Flag{
	&cli.StringFlag{Name: "load-state", Usage: "at start, set the accounts of this anvil state file (JSON, as anvil --dump-state writes) in the pending block", EnvVars: envName("load-state")},
	&cli.StringFlag{Name: "dump-state", Usage: "on exit, write the pending state to this file in anvil's state format", EnvVars: envName("dump-state")},
	&cli.StringFlag{Name: "state", Usage: "--load-state and --dump-state with one file (loaded when it exists)", EnvVars: envName("state")},
}

// stateFiles are the files to load at start and dump on exit.
type stateFiles struct{ load, dump string }

func stateFileFlags(c *cli.Context) (stateFiles, error) {
	f := stateFiles{load: c.String("load-state"), dump: c.String("dump-state")}
	if s := c.String("state"); s != "" {
		if f.load != "" || f.dump != "" {
			return f, errors.New("--state cannot be given with --load-state or --dump-state")
		}
		f.dump = s
		if _, err := os.Stat(s); err == nil {
			f.load = s
		} else if !errors.Is(err, fs.ErrNotExist) {
			return f, err
		}
	}
	if c.Bool("no-sequencer") && (f.load != "" || f.dump != "") {
		return f, errors.New("state files need the sequencer (not --no-sequencer)")
	}
	return f, nil
}

// load applies the load file to the started node.
func (f stateFiles) loadInto(n *node.Node) error {
	if f.load == "" {
		return nil
	}
	if n.Sequencer == nil {
		return errors.New("state files need the sequencer")
	}
	return anvil.LoadStateFile(context.Background(), n.Sequencer, f.load)
}

// dumpFrom writes the dump file before the node closes.
func (f stateFiles) dumpFrom(n *node.Node) error {
	if f.dump == "" || n.Sequencer == nil {
		return nil
	}
	if err := anvil.DumpStateFile(n.Sequencer, n.Fork != nil, f.dump); err != nil {
		return fmt.Errorf("dump state to %s: %w", f.dump, err)
	}
	return nil
}
