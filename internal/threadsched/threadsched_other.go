//go:build !linux

package threadsched

import "errors"

// Each is Linux only.
func Each(func(tid int) error) error { return errors.ErrUnsupported }

// Batch is Linux only: elsewhere threads keep the system's default policy.
func Batch(bool) error { return errors.ErrUnsupported }
