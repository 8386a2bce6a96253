package postgres

import (
	"testing"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetype"
)

// TestMemoStaysBounded fills the memo's quotes well past its bound: a busy
// instance's memory stays flat, and the newest quote is always remembered.
func TestMemoStaysBounded(t *testing.T) {
	m := newMemo()
	var last uuid.UUID
	for range 3 * maxRemembered {
		last = uuid.New()
		m.quoteCreated(storage.Quote{ID: last, Principal: "alice"})
	}
	assert.Len(t, m.quotes, maxRemembered)
	m.read(storage.Reads{Principal: "alice", SpendControls: true}, storage.ReadResult{})
	_, ok := m.answer(storage.Reads{Principal: "alice", SpendControls: true, QuoteID: last})
	assert.True(t, ok)
}

// TestMemoAnswersOnlyACallsReads shows what the memo will not answer: reads
// that want a grant, limits or a new quote, that ask for something it has
// not seen, or that come after it forgot. (Reads no call is decided on, a
// ReadBatch's, never ask it: see TestRememberedReadsAreCheckedAtAdmission.)
func TestMemoAnswersOnlyACallsReads(t *testing.T) {
	m := newMemo()
	q := storage.Quote{ID: uuid.New(), Principal: "alice", ToolID: "echo"}
	m.quoteCreated(q)
	call := storage.Reads{Principal: "alice", ToolID: "echo", SpendControls: true, QuoteID: q.ID}

	_, ok := m.answer(call)
	assert.False(t, ok, "the controls were never read")
	daily := decimal.RequireFromString("5.0000")
	m.read(storage.Reads{Principal: "alice", SpendControls: true}, storage.ReadResult{
		SpendControls: &toolgatetype.SpendControls{DailyLimitUSD: &daily,
			Tools: map[string]toolgatetype.ToolSpendControls{"echo": {}}},
	})
	res, ok := m.answer(call)
	require.True(t, ok)
	assert.Equal(t, storage.QuoteOpen, res.read.Quote.State)
	assert.Equal(t, "5", res.read.SpendControls.DailyLimitUSD.String())
	assert.False(t, res.approvalRead)

	// The caller's answer is its own: changing it changes nothing remembered.
	delete(res.read.SpendControls.Tools, "echo")
	again, _ := m.answer(call)
	assert.Contains(t, again.read.SpendControls.Tools, "echo")

	for name, r := range map[string]storage.Reads{
		"a key's record":  {Principal: "alice", SpendControls: true, QuoteID: q.ID, Key: "k1"},
		"a grant":         {Principal: "alice", SpendControls: true, QuoteID: q.ID, GrantID: uuid.New()},
		"limits":          {Principal: "alice", SpendControls: true, QuoteID: q.ID, Limits: []storage.Limit{{}}},
		"no controls":     {Principal: "alice", QuoteID: q.ID},
		"another quote":   {Principal: "alice", SpendControls: true, QuoteID: uuid.New()},
		"approval unseen": {Principal: "alice", ToolID: "echo", SpendControls: true, Approval: true, QuoteID: q.ID},
	} {
		_, ok := m.answer(r)
		assert.False(t, ok, name)
	}

	m.read(storage.Reads{Principal: "alice", ToolID: "echo", Approval: true}, storage.ReadResult{})
	withApproval := call
	withApproval.Approval = true
	res, ok = m.answer(withApproval)
	require.True(t, ok, "no approval is remembered as none")
	assert.True(t, res.approvalRead)
	assert.Nil(t, res.read.Approval)

	m.forget("alice", "echo")
	_, ok = m.answer(call)
	assert.False(t, ok, "forgotten controls")
	m.read(storage.Reads{Principal: "alice", SpendControls: true}, storage.ReadResult{})
	m.forgetQuote(q.ID)
	_, ok = m.answer(call)
	assert.False(t, ok, "forgotten quote")
}
