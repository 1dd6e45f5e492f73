package follower

import (
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/preconf/preconf/follower/feed"
	"github.com/preconf/preconf/internal/option"
	"github.com/preconf/preconf/remote"
)

// Defaults of Config's zero values (the feed connection's are follower/feed's).
const (
	DefaultPollInterval    = 100 * time.Millisecond
	DefaultUpstreamTimeout = 10 * time.Second
)

// Validate checks the configuration. Zero values are the defaults (New
// fills them in); negative ones, a missing URL or chain, and a URL of
// another scheme are errors. Errors are option.FieldErrors naming the
// option as `preconf follow` spells its flag ("upstream", "flashblocks",
// "upstream.poll", "flashblocks.ahead", …; "flashblocks.min-backoff" and
// "flashblocks.max-frame" have no flag).
func (c *Config) Validate() error {
	if msg := checkURL(c.Upstream, "http", "https"); msg != "" {
		return &option.FieldError{Field: "upstream", Msg: msg}
	}
	if msg := checkURL(c.Feed, "ws", "wss", "http", "https"); msg != "" {
		return &option.FieldError{Field: "flashblocks", Msg: msg}
	}
	if c.Chain == nil || c.Chain.ChainID == nil {
		return option.Errorf("chain", "is required (a chain configuration with its chain id)")
	}
	if c.Proofs < remote.ProofsAuto || c.Proofs > remote.ProofsOff {
		return option.Errorf("proofs", "unknown mode %d (want auto, required or off)", c.Proofs)
	}
	for _, d := range []struct {
		field string
		v     time.Duration
	}{
		{"upstream.poll", c.PollInterval}, {"upstream.timeout", c.UpstreamTimeout},
		{"flashblocks.min-backoff", c.MinBackoff}, {"flashblocks.backoff", c.MaxBackoff},
		{"flashblocks.ping", c.PingInterval}, {"flashblocks.stall", c.Stall},
	} {
		if d.v < 0 {
			return option.Errorf(d.field, "must not be negative (0: the default)")
		}
	}
	if c.Ahead < 0 {
		return option.Errorf("flashblocks.ahead", "must not be negative (0: the default, %d)", feed.DefaultAhead)
	}
	if c.MaxFrame < 0 {
		return option.Errorf("flashblocks.max-frame", "must not be negative (0: the default)")
	}
	if d := c.withDefaults(); d.MaxBackoff < d.MinBackoff {
		return option.Errorf("flashblocks.backoff", "%v is below the first reconnection's wait %v", d.MaxBackoff, d.MinBackoff)
	}
	return nil
}

// checkURL says what is wrong with an endpoint URL ("": nothing): empty,
// unparsable, another scheme, no host.
func checkURL(s string, schemes ...string) string {
	if s == "" {
		return "is required"
	}
	u, err := url.Parse(s)
	if err != nil {
		return "is not a URL"
	}
	for _, scheme := range schemes {
		if u.Scheme == scheme && u.Host != "" {
			return ""
		}
	}
	return fmt.Sprintf("%s: want a URL of scheme %s, with a host", remote.RedactURL(s), strings.Join(schemes, " or "))
}

// withDefaults fills the zero values Validate allows.
func (c Config) withDefaults() Config {
	set := func(d *time.Duration, def time.Duration) {
		if *d == 0 {
			*d = def
		}
	}
	set(&c.PollInterval, DefaultPollInterval)
	set(&c.UpstreamTimeout, DefaultUpstreamTimeout)
	set(&c.MinBackoff, feed.DefaultMinBackoff)
	set(&c.MaxBackoff, feed.DefaultMaxBackoff)
	set(&c.PingInterval, feed.DefaultPingInterval)
	set(&c.Stall, DefaultStall)
	if c.Ahead == 0 {
		c.Ahead = feed.DefaultAhead
	}
	if c.MaxFrame == 0 {
		c.MaxFrame = feed.DefaultReadLimit
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}
