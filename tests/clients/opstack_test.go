package clients_test

import "testing"

// TestViemOPStack runs viem's OP-stack actions against the dev chain (the
// shared node): estimateTotalFee and its parts through the GasPriceOracle at
// latest and at pending, a transaction's real cost against the estimate and
// its receipt's L1 fee fields, and an injected deposit read back with viem's
// OP-stack formatters (opstack.test.mjs).
func TestViemOPStack(t *testing.T) {
	nodeTests(t, needNode(t), []string{"opstack.test.mjs"}, map[string]int{"OPSTACK": 7})
}
