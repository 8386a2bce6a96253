package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/toolgate/toolgate/internal/suggest"
)

// command is one of toolgate's commands. Each parses its own flags with
// cli.parse, so that every command answers -h alike: its usage on stdout,
// exit 0; and a mistake alike: one line on stderr, exit 2.
type command struct {
	// name is the words that select it after "toolgate": "serve",
	// "tools check". A command may extend another's name ("mcp pin"
	// beside "mcp"): the longest name that matches wins.
	name string
	// synopsis is what follows the name in its usage line.
	synopsis string
	// summary is its line in the list of commands.
	summary string
	// about is what its help says between the usage line and the flags.
	about string
	// run runs it with the arguments after its name.
	run func(ctx context.Context, c *cli, cmd *command, args []string) int
}

// commands are toolgate's commands, in the order help lists them. A new
// command is one more line.
var commands = []*command{
	serveCommand,
	mcpCommand,
	mcpPinCommand,
	toolsCheckCommand,
	receiptsExportCommand,
	receiptsVerifyCommand,
	eventsListCommand,
	eventsRetryCommand,
	helpCommand,
	versionCommand,
}

// cli is what a command runs with: the command table, the process's
// streams and its environment.
type cli struct {
	commands []*command
	getenv   func(string) string
	stdin    io.Reader
	stdout   io.Writer
	stderr   io.Writer
}

// run finds the command args name and runs it. Without a command, or
// with flags only, toolgate serves, as it always has.
func (c *cli) run(ctx context.Context, args []string) int {
	if len(args) > 0 {
		switch args[0] {
		case "-h", "-help", "--help":
			c.usage(c.stdout)
			return exitOK
		case "-version", "--version":
			return versionCommand.run(ctx, c, versionCommand, args[1:])
		}
	}
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return serveCommand.run(ctx, c, serveCommand, args)
	}
	cmd, rest := c.find(args)
	if cmd != nil {
		if code, mistyped := c.mistypedSubcommand(cmd, rest); mistyped {
			return code
		}
		return cmd.run(ctx, c, cmd, rest)
	}
	if group := c.group(args[0]); len(group) > 0 {
		return c.runGroup(args[0], group, args[1:])
	}
	fmt.Fprintf(c.stderr, "toolgate: unknown command %q%s (see toolgate help)\n", args[0], c.didYouMeanCommand("", args[0]))
	return exitUsage
}

// words are the words that can follow name ("" for toolgate itself) in
// a command's name: "mcp" and "tools" after "", "pin" after "mcp".
func (c *cli) words(name string) []string {
	var out []string
	for _, cmd := range c.commands {
		rest, ok := strings.CutPrefix(cmd.name, name)
		if name != "" && !strings.HasPrefix(rest, " ") || !ok {
			continue
		}
		if word := strings.Fields(rest); len(word) > 0 && !slices.Contains(out, word[0]) {
			out = append(out, word[0])
		}
	}
	return out
}

// didYouMeanCommand is didYouMean for a word after name ("" for toolgate
// itself), suggesting the whole command: "mcp pin" for "mcp pn".
func (c *cli) didYouMeanCommand(name, word string) string {
	meant := suggest.Nearest(word, c.words(name))
	if meant == "" {
		return ""
	}
	return fmt.Sprintf(": did you mean %q?", strings.TrimSpace(name+" "+meant))
}

// mistypedSubcommand answers "toolgate mcp pn": an argument after a
// command that others extend, and near enough one of their words to be
// meant as it, is a mistyped command rather than the command's argument.
func (c *cli) mistypedSubcommand(cmd *command, rest []string) (int, bool) {
	if len(rest) == 0 || strings.HasPrefix(rest[0], "-") {
		return 0, false
	}
	hint := c.didYouMeanCommand(cmd.name, rest[0])
	if hint == "" {
		return 0, false
	}
	fmt.Fprintf(c.stderr, "toolgate: unknown command \"%s %s\"%s (see toolgate help %s)\n", cmd.name, rest[0], hint, cmd.name)
	return exitUsage, true
}

// find returns the command with the longest name that starts args, and
// the arguments after it.
func (c *cli) find(args []string) (*command, []string) {
	var best *command
	var n int
	for _, cmd := range c.commands {
		words := strings.Fields(cmd.name)
		if len(words) > n && len(words) <= len(args) && slices.Equal(words, args[:len(words)]) {
			best, n = cmd, len(words)
		}
	}
	return best, args[n:]
}

// group returns the commands whose name starts with the word word and goes
// on: "tools" for "tools check".
func (c *cli) group(word string) []*command {
	var out []*command
	for _, cmd := range c.commands {
		if strings.HasPrefix(cmd.name, word+" ") {
			out = append(out, cmd)
		}
	}
	return out
}

// runGroup answers a word that only starts commands' names: its help for
// -h, a mistake otherwise.
func (c *cli) runGroup(word string, group []*command, args []string) int {
	if len(args) > 0 && isHelpFlag(args[0]) {
		c.groupUsage(c.stdout, word, group)
		return exitOK
	}
	if len(args) == 0 {
		fmt.Fprintf(c.stderr, "toolgate %s: name a command (see toolgate help %s)\n", word, word)
		return exitUsage
	}
	fmt.Fprintf(c.stderr, "toolgate: unknown command \"%s %s\"%s (see toolgate help %s)\n", word, args[0], c.didYouMeanCommand(word, args[0]), word)
	return exitUsage
}

func isHelpFlag(s string) bool { return s == "-h" || s == "-help" || s == "--help" }

// prefix is how the command's messages start: "toolgate" for the server,
// which most people start without the word serve.
func (cmd *command) prefix() string {
	if cmd.name == "serve" {
		return "toolgate"
	}
	return "toolgate " + cmd.name
}

// flagSet returns an empty flag set for cmd; parse reports its help and
// mistakes.
func (c *cli) flagSet(cmd *command) *flag.FlagSet {
	fs := flag.NewFlagSet("toolgate "+cmd.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parse parses args with fs. When it returns false the command is over,
// with the exit code returned: help was asked for and printed on stdout
// (0), or the arguments are wrong, said in one line on stderr (2).
func (c *cli) parse(cmd *command, fs *flag.FlagSet, args []string) (int, bool) {
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		c.commandUsage(c.stdout, cmd, fs)
		return exitOK, false
	case err != nil:
		c.mistake(cmd, err)
		return exitUsage, false
	}
	return exitOK, true
}

// mistake says, once, what is wrong with how cmd was run.
func (c *cli) mistake(cmd *command, err error) {
	fmt.Fprintf(c.stderr, "%s: %v (see toolgate help %s)\n", cmd.prefix(), err, cmd.name)
}

// noArgs refuses arguments after the flags of a command that takes none.
func noArgs(fs *flag.FlagSet) error {
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return nil
}

// usage is toolgate's own help: every command, one line each, and the
// server's flags, which work without the word serve.
func (c *cli) usage(w io.Writer) {
	fmt.Fprint(w, `toolgate gates agents' tool calls: quotes, policy, approvals by people,
spend controls, and calls that run exactly once.

Usage:
  toolgate [serve] [flags]      run the server (the default command)
  toolgate COMMAND [arguments]

Commands:
`)
	c.list(w, c.commands)
	fmt.Fprintln(w, "\nFlags of serve:")
	fs := c.flagSet(serveCommand)
	newServeOptions(fs)
	printFlags(w, fs)
	fmt.Fprintln(w, "\nRun \"toolgate help COMMAND\" for a command's flags.")
}

// list prints cmds, one line each.
func (c *cli) list(w io.Writer, cmds []*command) {
	tw := tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
	for _, cmd := range cmds {
		fmt.Fprintf(tw, "  %s\t%s\n", cmd.name, cmd.summary)
	}
	tw.Flush()
}

// commandUsage is the help of one command: its usage line, what it does,
// its flags, and the commands that extend its name.
func (c *cli) commandUsage(w io.Writer, cmd *command, fs *flag.FlagSet) {
	fmt.Fprintf(w, "Usage: toolgate %s %s\n\n", cmd.name, cmd.synopsis)
	about := cmd.about
	if about == "" {
		about = strings.ToUpper(cmd.summary[:1]) + cmd.summary[1:] + "."
	}
	fmt.Fprintln(w, about)
	if hasFlags(fs) {
		fmt.Fprintln(w, "\nFlags:")
		printFlags(w, fs)
	}
	if more := c.group(cmd.name); len(more) > 0 {
		fmt.Fprintln(w, "\nCommands:")
		c.list(w, more)
	}
}

// groupUsage is the help of a word that only starts commands' names.
func (c *cli) groupUsage(w io.Writer, word string, group []*command) {
	fmt.Fprintf(w, "Usage: toolgate %s COMMAND [arguments]\n\nCommands:\n", word)
	c.list(w, group)
	fmt.Fprintf(w, "\nRun \"toolgate help %s COMMAND\" for a command's flags.\n", word)
}

func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

// printFlags prints fs's flags as the flag package does.
func printFlags(w io.Writer, fs *flag.FlagSet) {
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}

// helpCommand is "toolgate help [COMMAND]".
var helpCommand = &command{
	name:     "help",
	synopsis: "[COMMAND]",
	summary:  "show toolgate's help, or a command's",
	run: func(ctx context.Context, c *cli, cmd *command, args []string) int {
		fs := c.flagSet(cmd)
		if code, ok := c.parse(cmd, fs, args); !ok {
			return code
		}
		args = fs.Args()
		if len(args) == 0 {
			c.usage(c.stdout)
			return exitOK
		}
		if target, rest := c.find(args); target != nil && len(rest) == 0 {
			// A command's help is what it answers to -h.
			return target.run(ctx, c, target, []string{"-h"})
		}
		if group := c.group(strings.Join(args, " ")); len(group) > 0 {
			c.groupUsage(c.stdout, strings.Join(args, " "), group)
			return exitOK
		}
		fmt.Fprintf(c.stderr, "toolgate help: no command %q (see toolgate help)\n", strings.Join(args, " "))
		return exitUsage
	},
}
