// Package forkrules decides, for a chain config and a block time, the
// execution rules preconf carries on top of op-geth v1.101702.3, the last
// op-geth release: the OP Stack forks it names but does not execute (Karst,
// OP Stack Upgrade 19), and the forks preconf refuses to run because it does
// not implement them (Lagoon). Everything that executes or validates a
// transaction asks here, so a new fork is one change: see At, and
// docs/chains.md for the rules themselves and their sources.
package forkrules

import (
	"fmt"
	"strings"

	"github.com/ethereum/go-ethereum/params"
)

// Fork is an OP Stack network upgrade with an execution-layer activation
// time in op-geth's ChainConfig (Bedrock is block-based and Delta changed
// nothing the execution layer sees).
type Fork uint8

// The OP Stack forks, in activation order.
const (
	None Fork = iota // not an OP-stack chain, or none active yet
	Regolith
	Canyon
	Ecotone
	Fjord
	Granite
	Holocene
	Isthmus
	Jovian
	Karst
	Lagoon
)

// Newest is the newest fork preconf executes; a chain that activates a later
// one is refused (Check, Refused).
const Newest = Karst

var forkNames = [...]string{"none", "Regolith", "Canyon", "Ecotone", "Fjord", "Granite", "Holocene", "Isthmus", "Jovian", "Karst", "Lagoon"}

func (f Fork) String() string {
	if int(f) < len(forkNames) {
		return forkNames[f]
	}
	return fmt.Sprintf("fork(%d)", uint8(f))
}

// Time is f's activation time in cfg (nil: not scheduled).
func (f Fork) Time(cfg *params.ChainConfig) *uint64 {
	switch f {
	case Regolith:
		return cfg.RegolithTime
	case Canyon:
		return cfg.CanyonTime
	case Ecotone:
		return cfg.EcotoneTime
	case Fjord:
		return cfg.FjordTime
	case Granite:
		return cfg.GraniteTime
	case Holocene:
		return cfg.HoloceneTime
	case Isthmus:
		return cfg.IsthmusTime
	case Jovian:
		return cfg.JovianTime
	case Karst:
		return cfg.KarstTime
	case Lagoon:
		return cfg.LagoonTime
	}
	return nil
}

// ActiveAt reports whether f is active at time on cfg, an OP-stack chain.
func (f Fork) ActiveAt(cfg *params.ChainConfig, time uint64) bool {
	t := f.Time(cfg)
	return cfg.Optimism != nil && t != nil && *t <= time
}

// Latest is the newest OP fork active at time on cfg (None on a chain that is
// not an OP-stack one).
func Latest(cfg *params.ChainConfig, time uint64) Fork {
	for f := Lagoon; f > None; f-- {
		if f.ActiveAt(cfg, time) {
			return f
		}
	}
	return None
}

// Activation is a fork and its time.
type Activation struct {
	Fork Fork
	Time uint64
}

// Schedule is cfg's OP forks with a time, in activation order.
func Schedule(cfg *params.ChainConfig) []Activation {
	if cfg.Optimism == nil {
		return nil
	}
	var out []Activation
	for f := Regolith; f <= Lagoon; f++ {
		if t := f.Time(cfg); t != nil {
			out = append(out, Activation{f, *t})
		}
	}
	return out
}

// Activates reports whether f activates in the block at time whose parent is
// at parentTime: the first block at or past f's time.
func (f Fork) Activates(cfg *params.ChainConfig, time, parentTime uint64) bool {
	return f.ActiveAt(cfg, time) && !f.ActiveAt(cfg, parentTime)
}

// UnsupportedError is a chain whose rules preconf does not implement.
type UnsupportedError struct {
	Fork string // the fork's name
	Time uint64 // its activation time
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("the chain activates %s (at time %d), which preconf does not implement (it executes OP Stack forks through %s); refusing to execute %s blocks by older rules", e.Fork, e.Time, Newest, e.Fork)
}

// Refused is the first fork cfg schedules past Newest (nil when none): a
// chain preconf cannot execute once that fork is active.
func Refused(cfg *params.ChainConfig) *UnsupportedError {
	if cfg.Optimism == nil {
		return nil
	}
	for f := Newest + 1; f <= Lagoon; f++ {
		if t := f.Time(cfg); t != nil {
			return &UnsupportedError{Fork: f.String(), Time: *t}
		}
	}
	return nil
}

// Check refuses a block at time on cfg when a fork preconf does not
// implement is active by then (nil otherwise): start-up checks it at the
// head, executors at every block, so a chain that schedules such a fork
// runs up to its activation block and stops there with the fork's name.
func Check(cfg *params.ChainConfig, time uint64) error {
	if e := Refused(cfg); e != nil && time >= e.Time {
		return e
	}
	return nil
}

// ParseFork is the fork named s, case-insensitively ("karst", "Jovian").
func ParseFork(s string) (Fork, error) {
	for f := Regolith; f <= Lagoon; f++ {
		if strings.EqualFold(s, f.String()) {
			return f, nil
		}
	}
	return None, fmt.Errorf("unknown OP Stack fork %q", s)
}
