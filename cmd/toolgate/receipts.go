package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	gatewayclient "github.com/toolgate/toolgate/client"
	"github.com/toolgate/toolgate/internal/cli"
	"github.com/toolgate/toolgate/receipt"
	"github.com/toolgate/toolgate/toolgatetype"
)

var receiptsExportCommand = &cli.Command{
	Name:     "receipts export",
	Synopsis: "-url URL [-key KEY] [-principal ID] [-o FILE]",
	Summary:  "write a principal's receipts from a gateway as JSON lines",
	About: `Reads the chain of receipts of the key's principal (or, with an approver's
key, of -principal) from a running gateway, page by page, and writes each
signed receipt on a line of its own, exactly as the gateway signed it: the
file "toolgate receipts verify -file" checks, anywhere, with the published
keys. The API key is -key, or $TOOLGATE_API_KEY.`,
	Run: runReceiptsExport,
}

var receiptsVerifyCommand = &cli.Command{
	Name:     "receipts verify",
	Synopsis: "(-url URL [-key KEY] [-principal ID] | -file FILE) [-keys FILE|URL]",
	Summary:  "check that a chain of receipts is whole, in order and signed by the gateway's keys",
	About: `Checks every receipt's signature against the published keys, and that each
principal's receipts run from seq 1 with no gap, each linked to the one
before. The chain comes from a running gateway (-url, with the API key in
-key or $TOOLGATE_API_KEY) or from a file "toolgate receipts export" wrote
(-file).
The keys come from -keys, a file or URL of the gateway's key document
(/.well-known/toolgate-receipt-keys); with -url and no -keys, from that
gateway. Prints how many receipts verified, exit 0; or the first break, with
its seq and the check that failed, exit 1.`,
	Run: runReceiptsVerify,
}

// receiptSourceFlags are the flags that say where a chain comes from.
type receiptSourceFlags struct {
	url, key, principal string
}

func (f *receiptSourceFlags) register(fs interface {
	StringVar(*string, string, string, string)
}) {
	fs.StringVar(&f.url, "url", "", "the gateway's base `URL`")
	fs.StringVar(&f.key, "key", "", "the API `key` to read receipts with (default $TOOLGATE_API_KEY, which other users of the machine cannot see in the process list)")
	fs.StringVar(&f.principal, "principal", "", "the principal `ID` whose chain an approver's key reads")
}

// receiptPages calls each with every receipt of the chain at the gateway,
// in seq order.
func receiptPages(ctx context.Context, c *cli.CLI, f receiptSourceFlags, each func([]byte) error) error {
	key := f.key
	if key == "" {
		key = c.Getenv("TOOLGATE_API_KEY")
	}
	if key == "" {
		return errors.New("-key or $TOOLGATE_API_KEY must give the API key to read receipts with")
	}
	cl, err := gatewayclient.New(f.url, key, nil)
	if err != nil {
		return err
	}
	return cl.EachReceipt(ctx, f.principal, each)
}

func runReceiptsExport(ctx context.Context, c *cli.CLI, cmd *cli.Command, args []string) int {
	fs := c.FlagSet(cmd)
	var src receiptSourceFlags
	src.register(fs)
	out := fs.String("o", "", "write to `file` instead of standard output")
	if code, ok := c.Parse(cmd, fs, args); !ok {
		return code
	}
	if src.url == "" {
		c.Mistake(cmd, errors.New("-url URL is required"))
		return exitUsage
	}
	w := c.Stdout
	var file *os.File
	if *out != "" {
		var err error
		if file, err = os.Create(*out); err != nil {
			fmt.Fprintf(c.Stderr, "toolgate receipts export: %v\n", err)
			return exitFailed
		}
		w = file
	}
	buf := bufio.NewWriter(w)
	n := 0
	err := receiptPages(ctx, c, src, func(r []byte) error {
		n++
		buf.Write(r)
		return buf.WriteByte('\n')
	})
	if err == nil {
		err = buf.Flush()
	}
	if file != nil {
		if cerr := file.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintf(c.Stderr, "toolgate receipts export: %v\n", err)
		return exitFailed
	}
	fmt.Fprintf(c.Stderr, "toolgate receipts export: %d receipts\n", n)
	return exitOK
}

func runReceiptsVerify(ctx context.Context, c *cli.CLI, cmd *cli.Command, args []string) int {
	fs := c.FlagSet(cmd)
	var src receiptSourceFlags
	src.register(fs)
	file := fs.String("file", "", "verify the JSON lines `file` receipts export wrote")
	keysFrom := fs.String("keys", "", "the key document: a `file` or URL (default: the -url gateway's)")
	if code, ok := c.Parse(cmd, fs, args); !ok {
		return code
	}
	switch {
	case (src.url == "") == (*file == ""):
		c.Mistake(cmd, errors.New("give one of -url URL and -file FILE"))
		return exitUsage
	case *file != "" && *keysFrom == "":
		c.Mistake(cmd, errors.New("-file needs -keys: the key document, a file or the gateway's /.well-known/toolgate-receipt-keys"))
		return exitUsage
	}
	fail := func(err error) int {
		fmt.Fprintf(c.Stderr, "toolgate receipts verify: %v\n", err)
		return exitFailed
	}
	if *keysFrom == "" {
		*keysFrom = strings.TrimSuffix(src.url, "/") + "/.well-known/toolgate-receipt-keys"
	}
	doc, err := readReceiptKeys(ctx, *keysFrom)
	if err != nil {
		return fail(err)
	}
	v, err := receipt.NewVerifier(doc)
	if err != nil {
		return fail(err)
	}
	line := 0
	if *file != "" {
		var f *os.File
		if f, err = os.Open(*file); err == nil {
			line, err = v.AddLines(f)
			f.Close()
		}
	} else {
		err = receiptPages(ctx, c, src, v.Add)
	}
	var broke *receipt.Break
	switch {
	case errors.As(err, &broke) && line > 0:
		fmt.Fprintf(c.Stdout, "BROKEN at %v (line %d of %s)\n", broke, line, *file)
		return exitFailed
	case broke != nil:
		fmt.Fprintf(c.Stdout, "BROKEN at %v\n", broke)
		return exitFailed
	case err != nil:
		return fail(err)
	}
	fmt.Fprintf(c.Stdout, "ok: %d receipts of %d principals verified: every signature, every link, no gap\n", v.Count(), v.Principals())
	return exitOK
}

// readReceiptKeys reads a key document from a file or an http(s) URL.
func readReceiptKeys(ctx context.Context, from string) (toolgatetype.ReceiptKeys, error) {
	var body []byte
	var err error
	if strings.HasPrefix(from, "http://") || strings.HasPrefix(from, "https://") {
		body, err = fetchKeys(ctx, from)
	} else {
		body, err = os.ReadFile(from)
	}
	if err != nil {
		return toolgatetype.ReceiptKeys{}, fmt.Errorf("keys: %w", err)
	}
	var doc toolgatetype.ReceiptKeys
	if err := json.Unmarshal(body, &doc); err != nil {
		return doc, fmt.Errorf("keys %s: not a key document: %w", from, err)
	}
	return doc, nil
}

func fetchKeys(ctx context.Context, url string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s answered %s", url, resp.Status)
	}
	return io.ReadAll(io.LimitReader(resp.Body, 1<<20))
}
