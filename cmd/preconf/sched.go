package main

import (
	"errors"
	"log/slog"

	"github.com/urfave/cli/v2"

	"github.com/preconf/preconf/internal/threadsched"
)

var schedFlags = []cli.Flag{
	&cli.BoolFlag{Name: "sched.batch", Value: true, Usage: "run the node's threads under Linux's SCHED_BATCH policy, so that a thread waking up does not preempt another mid-request (threads put under another policy with chrt keep theirs; no effect elsewhere)", EnvVars: envName("sched.batch")},
}

// applySchedFlags sets the scheduling policy of the node's threads (see
// threadsched.Batch for why). Failing to is not fatal: the node serves as well,
// only with more wake-up preemption.
func applySchedFlags(c *cli.Context, log *slog.Logger) {
	if !c.Bool("sched.batch") {
		return
	}
	if err := threadsched.Batch(true); err != nil && !errors.Is(err, errors.ErrUnsupported) {
		log.Warn("could not set SCHED_BATCH", "err", err)
	}
}
