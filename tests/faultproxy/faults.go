package faultproxy

import "sync"

// Every applies f to every n-th frame (counting from 1) and relays the
// others.
func Every(n int, f Fault) Fault {
	i := 0
	return func(fr Frame) []Frame {
		i++
		if i%n == 0 {
			return f(fr)
		}
		return []Frame{fr}
	}
}

// Drop sends nothing.
func Drop(Frame) []Frame { return nil }

// Duplicate sends the frame twice.
func Duplicate(fr Frame) []Frame { return []Frame{fr, fr} }

// Swap holds every n-th frame and sends it after the next one (two
// messages reordered).
func Swap(n int) Fault {
	var (
		i    int
		held *Frame
	)
	return func(fr Frame) []Frame {
		i++
		if held != nil {
			out := []Frame{fr, *held}
			held = nil
			return out
		}
		if i%n == 0 {
			held = &fr
			return nil
		}
		return []Frame{fr}
	}
}

// Replay keeps the last frames and, every n-th frame, sends one from back
// frames earlier first (a replay of an earlier block's message when back
// is more than a block's flashblocks).
func Replay(n, back int) Fault {
	ring := make([]Frame, 0, back+1)
	i := 0
	return func(fr Frame) []Frame {
		i++
		ring = append(ring, fr)
		if len(ring) > back+1 {
			ring = ring[1:]
		}
		if i%n == 0 && len(ring) == back+1 {
			return []Frame{ring[0], fr}
		}
		return []Frame{fr}
	}
}

// Holder holds every frame while on and sends them all at once, in order,
// with the next frame after Release (a feed delayed, then bursting). At
// most max frames are held; older ones are dropped past that.
type Holder struct {
	mu   sync.Mutex
	on   bool
	held []Frame
	max  int
}

// NewHolder holds at most max frames.
func NewHolder(max int) *Holder { return &Holder{max: max} }

// Hold starts holding.
func (h *Holder) Hold() {
	h.mu.Lock()
	h.on = true
	h.mu.Unlock()
}

// Release stops holding; the held frames go out with the next frame.
func (h *Holder) Release() {
	h.mu.Lock()
	h.on = false
	h.mu.Unlock()
}

// Held is the number of frames held.
func (h *Holder) Held() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.held)
}

// Fault is the holder as a Fault.
func (h *Holder) Fault(fr Frame) []Frame {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.on {
		if len(h.held) == h.max {
			h.held = h.held[1:]
		}
		h.held = append(h.held, fr)
		return nil
	}
	out := append(h.held, fr)
	h.held = nil
	return out
}
