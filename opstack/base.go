package opstack

import (
	"fmt"
	"strings"
	"time"
)

// Base left the OP Stack's clients at Azul, which brought Osaka's EVM rules
// on Base's own schedule, and at Denim replaced flashblocks with canonical
// 200 ms blocks: it no longer streams flashblocks, and its rules from Azul
// on are not the OP Stack's (docs.base.org: upgrades/azul, upgrades/denim).
type baseNetwork struct {
	name        string
	azul, denim time.Time
}

var baseNetworks = map[uint64]baseNetwork{
	8453:  {"Base Mainnet", time.Unix(1779991200, 0).UTC(), time.Date(2026, 11, 5, 18, 0, 0, 0, time.UTC)},
	84532: {"Base Sepolia", time.Unix(1776708000, 0).UTC(), time.Date(2026, 10, 21, 18, 0, 0, 0, time.UTC)},
}

// BaseError is a Base network given to preconf.
type BaseError struct {
	ChainID uint64
	Follow  bool // follow mode (otherwise a fork or a dev chain of Base's rules)
}

func (e *BaseError) Error() string {
	n := baseNetworks[e.ChainID]
	if e.Follow {
		return fmt.Sprintf("chain %d is %s, which retired flashblocks at its Denim upgrade (%s): it now seals a canonical block every 200 ms and streams no pre-confirmations, so there is nothing to follow (read Base's node directly at \"latest\"); the chains that pre-confirm are listed in docs/chains.md",
			e.ChainID, n.name, n.denim.Format("2006-01-02 15:04 MST"))
	}
	return fmt.Sprintf("chain %d is %s, which runs its own forks since Azul (%s) and Denim (%s), which preconf does not implement; refusing to execute its blocks by older rules",
		e.ChainID, n.name, n.azul.Format("2006-01-02 15:04 MST"), n.denim.Format("2006-01-02 15:04 MST"))
}

// CheckNotBase refuses Base's networks (nil for any other chain id); follow
// says why following them is pointless rather than why they cannot execute.
func CheckNotBase(chainID uint64, follow bool) error {
	if _, ok := baseNetworks[chainID]; ok {
		return &BaseError{ChainID: chainID, Follow: follow}
	}
	return nil
}

// baseNames are the names a user may give Base's networks by.
var baseNames = map[string]uint64{"base": 8453, "base-mainnet": 8453, "8453": 8453, "base-sepolia": 84532, "84532": 84532}

// CheckNameNotBase is CheckNotBase for a chain named as ChainID takes it.
func CheckNameNotBase(name string, follow bool) error {
	if id, ok := baseNames[strings.ToLower(strings.TrimSpace(name))]; ok {
		return CheckNotBase(id, follow)
	}
	return nil
}
