package server

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/toolgate/toolgate/storage"
)

// WriteEvents writes events as "toolgate events list" shows them: a
// table of where each delivery stands, or with asJSON one JSON object a
// line, payload included.
func WriteEvents(out io.Writer, events []storage.Event, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(out)
		for _, e := range events {
			if err := enc.Encode(eventLine(e)); err != nil {
				return err
			}
		}
		return nil
	}
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tTYPE\tSTATUS\tATTEMPTS\tCREATED\tNEXT OR DONE\tLAST ERROR")
	for _, e := range events {
		when := e.FinishedAt
		if e.Status == storage.EventPending {
			when = e.NextAttemptAt
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%s\t%s\t%s\n", e.ID, e.Type, e.Status, e.Attempts,
			e.CreatedAt.UTC().Format(time.RFC3339), when.UTC().Format(time.RFC3339), e.LastError)
	}
	return w.Flush()
}

// EventLine is an event as WriteEvents writes it in JSON, one a line: what
// a reader of "toolgate events list -json" decodes.
type EventLine struct {
	ID            string          `json:"id"`
	Type          string          `json:"type"`
	Status        string          `json:"status"`
	Attempts      int             `json:"attempts"`
	CreatedAt     time.Time       `json:"createdAt"`
	NextAttemptAt *time.Time      `json:"nextAttemptAt,omitempty"`
	FinishedAt    *time.Time      `json:"finishedAt,omitempty"`
	LastError     string          `json:"lastError,omitempty"`
	Payload       json.RawMessage `json:"payload"`
}

func eventLine(e storage.Event) EventLine {
	out := EventLine{ID: e.ID, Type: e.Type, Status: string(e.Status), Attempts: e.Attempts,
		CreatedAt: e.CreatedAt.UTC(), LastError: e.LastError, Payload: e.Payload}
	if e.Status == storage.EventPending {
		at := e.NextAttemptAt.UTC()
		out.NextAttemptAt = &at
	} else {
		at := e.FinishedAt.UTC()
		out.FinishedAt = &at
	}
	return out
}
