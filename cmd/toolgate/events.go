package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/toolgate/toolgate/internal/cli"
	"github.com/toolgate/toolgate/server"
	"github.com/toolgate/toolgate/storage"
)

// eventsListLimit is how many events toolgate events list shows at most.
const eventsListLimit = 1000

var eventsListCommand = &cli.Command{
	Name:     "events list",
	Synopsis: "[-status pending|failed|delivered] [-json] -config FILE",
	Summary:  "list the events (webhooks) of the config's store, newest first",
	About: `Reads the outbox of the store the config names: every event written with its
cause (an approval request made or decided, a budget alert or limit reached,
a call ended ambiguous) and where its delivery stands: pending (with its
attempts and when it is next tried), delivered, or failed (kept after its
retry period, webhooks.retryFor, or a 410 from the receiver; "toolgate events
retry" sends it again). At most 1,000, newest first. -json prints one JSON
object a line, with the payload.`,
	Run: runEventsList,
}

var eventsRetryCommand = &cli.Command{
	Name:     "events retry",
	Synopsis: "(ID | -failed) -config FILE",
	Summary:  "send a failed event again, or every failed one",
	About: `Makes the failed event ID (or, with -failed, every failed event) pending
again, due now, with a new retry period: the running servers on the store
deliver it within a second or so. A pending or delivered event is left as it
is. Prints how many were made pending.`,
	Run: runEventsRetry,
}

// openConfigStore opens the store of the config at path, for a command
// that works on it beside the running servers.
func openConfigStore(ctx context.Context, c *cli.CLI, path string) (storage.Store, func(), int) {
	if path == "" {
		fmt.Fprintln(c.Stderr, "toolgate: -config must name the server's config file, whose store holds the events")
		return nil, nil, exitUsage
	}
	cfg, err := server.LoadConfig(path)
	if err != nil {
		fmt.Fprintf(c.Stderr, "toolgate: %s: %v\n", path, err)
		return nil, nil, exitUsage
	}
	if cfg.StorageKind() == "memory" {
		fmt.Fprintf(c.Stderr, "toolgate: %s: its storage is memory, which only the running server sees: nothing to read\n", path)
		return nil, nil, exitUsage
	}
	store, closeStore, err := server.OpenStore(ctx, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		fmt.Fprintf(c.Stderr, "toolgate: %v\n", err)
		return nil, nil, exitFailed
	}
	return store, closeStore, exitOK
}

func runEventsList(ctx context.Context, c *cli.CLI, cmd *cli.Command, args []string) int {
	fs := c.FlagSet(cmd)
	configPath := fs.String("config", "", "the server's config `file`")
	status := fs.String("status", "", "list only events `pending`, failed or delivered")
	asJSON := fs.Bool("json", false, "print one JSON object a line, with each event's payload")
	if code, ok := c.Parse(cmd, fs, args); !ok {
		return code
	}
	switch storage.EventStatus(*status) {
	case "", storage.EventPending, storage.EventFailed, storage.EventDelivered:
	default:
		c.Mistake(cmd, fmt.Errorf("-status must be pending, failed or delivered, not %q", *status))
		return exitUsage
	}
	store, closeStore, code := openConfigStore(ctx, c, *configPath)
	if code != exitOK {
		return code
	}
	defer closeStore()
	events, err := store.ListEvents(ctx, storage.EventFilter{Status: storage.EventStatus(*status), Limit: eventsListLimit})
	if err != nil {
		fmt.Fprintf(c.Stderr, "toolgate: reading the events: %v\n", err)
		return exitFailed
	}
	if err := server.WriteEvents(c.Stdout, events, *asJSON); err != nil {
		fmt.Fprintf(c.Stderr, "toolgate: %v\n", err)
		return exitFailed
	}
	return exitOK
}

func runEventsRetry(ctx context.Context, c *cli.CLI, cmd *cli.Command, args []string) int {
	fs := c.FlagSet(cmd)
	configPath := fs.String("config", "", "the server's config `file`")
	allFailed := fs.Bool("failed", false, "every failed event")
	// The id may come before the flags, as the README writes it: the
	// flags after it are parsed too.
	var ids []string
	for {
		if code, ok := c.Parse(cmd, fs, args); !ok {
			return code
		}
		if fs.NArg() == 0 {
			break
		}
		ids, args = append(ids, fs.Arg(0)), fs.Args()[1:]
	}
	id := ""
	if len(ids) > 0 {
		id = ids[0]
	}
	switch {
	case len(ids) > 1 || *allFailed && id != "":
		c.Mistake(cmd, errors.New("name one event, or -failed for every failed one"))
		return exitUsage
	case !*allFailed && id == "":
		c.Mistake(cmd, errors.New("name the event to retry (its id, as toolgate events list shows it), or -failed"))
		return exitUsage
	}
	store, closeStore, code := openConfigStore(ctx, c, *configPath)
	if code != exitOK {
		return code
	}
	defer closeStore()
	n, err := store.RetryEvents(ctx, storage.RetryEvents{ID: id, Now: time.Now()})
	switch {
	case errors.Is(err, storage.ErrNotFound):
		fmt.Fprintf(c.Stderr, "toolgate: no event %q in the store\n", id)
		return exitFailed
	case err != nil:
		fmt.Fprintf(c.Stderr, "toolgate: retrying: %v\n", err)
		return exitFailed
	}
	fmt.Fprintf(c.Stdout, "%d event(s) pending again\n", n)
	return exitOK
}
