package sequencer

import (
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
)

// The waiters are the eth_sendRawTransactionSync callers blocked until their
// transaction is pre-confirmed: the one piece of sequencer state that request
// goroutines touch, under waitMu.

// notify wakes the eth_sendRawTransactionSync callers waiting for txs.
func (s *Sequencer) notify(txs types.Transactions) {
	s.waitMu.Lock()
	defer s.waitMu.Unlock()
	if len(s.waiters) == 0 {
		return
	}
	for _, tx := range txs {
		h := tx.Hash()
		for _, ch := range s.waiters[h] {
			close(ch)
		}
		delete(s.waiters, h)
	}
}

// Watch returns a channel closed when hash is pre-confirmed, and a cancel
// (eth_sendRawTransactionSync waits on it).
func (s *Sequencer) Watch(hash common.Hash) (<-chan struct{}, func()) {
	ch := make(chan struct{})
	s.waitMu.Lock()
	s.waiters[hash] = append(s.waiters[hash], ch)
	s.waitMu.Unlock()
	return ch, func() {
		s.waitMu.Lock()
		defer s.waitMu.Unlock()
		list := s.waiters[hash]
		for i, c := range list {
			if c == ch {
				list = append(list[:i], list[i+1:]...)
				break
			}
		}
		if len(list) == 0 {
			delete(s.waiters, hash)
		} else {
			s.waiters[hash] = list
		}
	}
}
