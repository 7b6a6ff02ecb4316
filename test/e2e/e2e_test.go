package e2e

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("smoke", func() {
	It("runs", func() {
		Expect(suite.decider.proc.exited()).To(BeFalse())
	})
})
