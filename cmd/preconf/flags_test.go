package main

import (
	"slices"
	"testing"

	"github.com/urfave/cli/v2"
)

// TestFlagsDefinedOnce: every flag name, alias and environment variable of
// the command line belongs to one flag value, and the groups both node
// commands take are the same values in both.
func TestFlagsDefinedOnce(t *testing.T) {
	app := newApp()
	owner := make(map[string]cli.Flag) // name, alias or variable → its flag
	var walk func(path string, flags []cli.Flag, cmds []*cli.Command)
	walk = func(path string, flags []cli.Flag, cmds []*cli.Command) {
		seen := make(map[string]bool)
		for _, f := range flags {
			keys := f.Names()
			if e, ok := f.(interface{ GetEnvVars() []string }); ok {
				keys = append(keys, e.GetEnvVars()...)
			}
			for _, k := range keys {
				if seen[k] {
					t.Errorf("%s: %s given twice", path, k)
				}
				seen[k] = true
				if o, ok := owner[k]; ok && o != f {
					t.Errorf("%s: %s defined twice (%q and %q)", path, k, o.Names()[0], f.Names()[0])
				}
				owner[k] = f
			}
		}
		for _, c := range cmds {
			walk(path+" "+c.Name, c.Flags, c.Subcommands)
		}
	}
	walk("preconf", app.Flags, app.Commands)

	follow := app.Command("follow")
	if follow == nil {
		t.Fatal("no follow command")
	}
	for _, g := range sharedGroups {
		for _, f := range g {
			if !slices.Contains(app.Flags, f) || !slices.Contains(follow.Flags, f) {
				t.Errorf("--%s is shared but not taken by both preconf and preconf follow", f.Names()[0])
			}
		}
	}
}
