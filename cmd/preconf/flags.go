package main

import (
	"errors"
	"fmt"
	"slices"

	"github.com/urfave/cli/v2"

	"github.com/preconf/preconf/internal/option"
)

// The command line's flags come in groups, each a value defined once beside
// the code that reads it (httpFlags in main.go, walletFlags in wallet.go,
// …). The commands that run a node list the groups they take, and the groups
// both take are the same values: one name, default, help and environment
// variable for a flag wherever it is given (TestFlagsDefinedOnce).

// sharedGroups are the flags of every node, local or following.
var sharedGroups = [][]cli.Flag{httpFlags, chainFlags, logFlags, walletFlags, limitFlags, gcFlags, schedFlags, simulateFlags}

// nodeGroups are `preconf`'s flags (a node with a local chain), in the
// order --help lists them.
var nodeGroups = [][]cli.Flag{httpFlags, chainFlags, devChainFlags, logFlags, forkFlags, gcFlags, limitFlags,
	pprofFlags, schedFlags, sequencerFlags, simulateFlags, stateFlags, walletFlags}

// followGroups are `preconf follow`'s flags, in the order --help lists them.
var followGroups = [][]cli.Flag{followOwnFlags, httpFlags, chainFlags, logFlags, walletFlags, limitFlags, gcFlags,
	schedFlags, simulateFlags}

// flagsOf is a command's flag list: its groups in order.
func flagsOf(groups [][]cli.Flag) []cli.Flag { return slices.Concat(groups...) }

// flagError names the flag of a package's configuration error: a
// package's Validate names its option (option.FieldError), flag maps that
// name to the flag's. Other errors are returned as they are.
func flagError(err error, flag func(field string) string) error {
	var fe *option.FieldError
	if errors.As(err, &fe) {
		return fmt.Errorf("--%s %s", flag(fe.Field), fe.Msg)
	}
	return err
}

// sameName is the mapping for packages whose options are named as their
// flags (follower.Config, node.Config's limits).
func sameName(field string) string { return field }

// prefixed maps a package's option names to flags that add a prefix
// ("approval" → "wallet.approval").
func prefixed(prefix string) func(string) string {
	return func(field string) string { return prefix + field }
}
