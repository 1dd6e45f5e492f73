package main

import (
	"slices"

	"github.com/urfave/cli/v2"
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
