// Package cli runs a program's commands from a table: it finds the
// command the arguments name (the longest name wins: "mcp pin" over
// "mcp"), answers -h and "help" with usage built from the table and each
// command's flags, and reports a mistake alike for every command, in one
// line with a suggestion for a mistyped command; and it says alike for
// every command that listens why an address cannot be listened on
// (ListenProblem).
package cli

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

// Exit codes.
const (
	ExitOK     = 0
	ExitFailed = 1
	ExitUsage  = 2
)

// Command is one of a program's commands. Each parses its own flags with
// CLI.Parse, so that every command answers -h alike: its usage on stdout,
// exit 0; and a mistake alike: one line on stderr, exit 2.
type Command struct {
	// Name is the words that select it after the program's name: "serve",
	// "tools check". A command may extend another's name ("mcp pin"
	// beside "mcp"): the longest name that matches wins.
	Name string
	// Synopsis is what follows the name in its usage line.
	Synopsis string
	// Summary is its line in the list of commands.
	Summary string
	// About is what its help says between the usage line and the flags.
	About string
	// Flags adds its flags to a flag set, for the program's help to list
	// those of the default command; nil when it has none there.
	Flags func(fs *flag.FlagSet)
	// Run runs it with the arguments after its name.
	Run func(ctx context.Context, c *CLI, cmd *Command, args []string) int
}

// CLI is what a command runs with: the program's command table, its
// streams and its environment.
type CLI struct {
	// Name is the program's: "toolgate".
	Name string
	// Intro opens the program's help: what it does and its usage lines,
	// up to the list of its commands.
	Intro string
	// Commands are the program's commands, in the order help lists them.
	Commands []*Command
	// Default runs without a command, or with flags only.
	Default *Command
	// Version answers -version and --version.
	Version *Command

	Getenv func(string) string
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
}

// Run finds the command args name and runs it, and returns the exit code.
// Without a command, or with flags only, it runs the default command.
func (c *CLI) Run(ctx context.Context, args []string) int {
	if len(args) > 0 {
		switch args[0] {
		case "-h", "-help", "--help":
			c.usage(c.Stdout)
			return ExitOK
		case "-version", "--version":
			return c.Version.Run(ctx, c, c.Version, args[1:])
		}
	}
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return c.Default.Run(ctx, c, c.Default, args)
	}
	cmd, rest := c.find(args)
	if cmd != nil {
		if code, mistyped := c.mistypedSubcommand(cmd, rest); mistyped {
			return code
		}
		return cmd.Run(ctx, c, cmd, rest)
	}
	if group := c.group(args[0]); len(group) > 0 {
		return c.runGroup(args[0], group, args[1:])
	}
	fmt.Fprintf(c.Stderr, "%s: unknown command %q%s (see %s help)\n", c.Name, args[0], c.didYouMeanCommand("", args[0]), c.Name)
	return ExitUsage
}

// words are the words that can follow name ("" for the program itself) in
// a command's name: "mcp" and "tools" after "", "pin" after "mcp".
func (c *CLI) words(name string) []string {
	var out []string
	for _, cmd := range c.Commands {
		rest, ok := strings.CutPrefix(cmd.Name, name)
		if name != "" && !strings.HasPrefix(rest, " ") || !ok {
			continue
		}
		if word := strings.Fields(rest); len(word) > 0 && !slices.Contains(out, word[0]) {
			out = append(out, word[0])
		}
	}
	return out
}

// didYouMeanCommand is suggest.DidYouMean for a word after name ("" for
// the program itself), suggesting the whole command: "mcp pin" for "mcp pn".
func (c *CLI) didYouMeanCommand(name, word string) string {
	meant := suggest.Nearest(word, c.words(name))
	if meant == "" {
		return ""
	}
	return fmt.Sprintf(": did you mean %q?", strings.TrimSpace(name+" "+meant))
}

// mistypedSubcommand answers "toolgate mcp pn": an argument after a
// command that others extend, and near enough one of their words to be
// meant as it, is a mistyped command rather than the command's argument.
func (c *CLI) mistypedSubcommand(cmd *Command, rest []string) (int, bool) {
	if len(rest) == 0 || strings.HasPrefix(rest[0], "-") {
		return 0, false
	}
	hint := c.didYouMeanCommand(cmd.Name, rest[0])
	if hint == "" {
		return 0, false
	}
	fmt.Fprintf(c.Stderr, "%s: unknown command \"%s %s\"%s (see %s help %s)\n", c.Name, cmd.Name, rest[0], hint, c.Name, cmd.Name)
	return ExitUsage, true
}

// find returns the command with the longest name that starts args, and
// the arguments after it.
func (c *CLI) find(args []string) (*Command, []string) {
	var best *Command
	var n int
	for _, cmd := range c.Commands {
		words := strings.Fields(cmd.Name)
		if len(words) > n && len(words) <= len(args) && slices.Equal(words, args[:len(words)]) {
			best, n = cmd, len(words)
		}
	}
	return best, args[n:]
}

// group returns the commands whose name starts with the word word and goes
// on: "tools" for "tools check".
func (c *CLI) group(word string) []*Command {
	var out []*Command
	for _, cmd := range c.Commands {
		if strings.HasPrefix(cmd.Name, word+" ") {
			out = append(out, cmd)
		}
	}
	return out
}

// runGroup answers a word that only starts commands' names: its help for
// -h, a mistake otherwise.
func (c *CLI) runGroup(word string, group []*Command, args []string) int {
	if len(args) > 0 && isHelpFlag(args[0]) {
		c.groupUsage(c.Stdout, word, group)
		return ExitOK
	}
	if len(args) == 0 {
		fmt.Fprintf(c.Stderr, "%s %s: name a command (see %s help %s)\n", c.Name, word, c.Name, word)
		return ExitUsage
	}
	fmt.Fprintf(c.Stderr, "%s: unknown command \"%s %s\"%s (see %s help %s)\n", c.Name, word, args[0], c.didYouMeanCommand(word, args[0]), c.Name, word)
	return ExitUsage
}

func isHelpFlag(s string) bool { return s == "-h" || s == "-help" || s == "--help" }

// prefix is how cmd's messages start: the program's name alone for the
// default command, which most people run without its name.
func (c *CLI) prefix(cmd *Command) string {
	if cmd == c.Default {
		return c.Name
	}
	return c.Name + " " + cmd.Name
}

// flagSet returns an empty flag set for cmd; parse reports its help and
// mistakes.
func (c *CLI) FlagSet(cmd *Command) *flag.FlagSet {
	fs := flag.NewFlagSet(c.Name+" "+cmd.Name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parse parses args with fs. When it returns false the command is over,
// with the exit code returned: help was asked for and printed on stdout
// (0), or the arguments are wrong, said in one line on stderr (2).
func (c *CLI) Parse(cmd *Command, fs *flag.FlagSet, args []string) (int, bool) {
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		c.commandUsage(c.Stdout, cmd, fs)
		return ExitOK, false
	case err != nil:
		c.Mistake(cmd, err)
		return ExitUsage, false
	}
	return ExitOK, true
}

// mistake says, once, what is wrong with how cmd was run.
func (c *CLI) Mistake(cmd *Command, err error) {
	fmt.Fprintf(c.Stderr, "%s: %v (see %s help %s)\n", c.prefix(cmd), err, c.Name, cmd.Name)
}

// noArgs refuses arguments after the flags of a command that takes none.
func NoArgs(fs *flag.FlagSet) error {
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return nil
}

// usage is the program's own help: every command, one line each, and the
// default command's flags, which work without its name.
func (c *CLI) usage(w io.Writer) {
	fmt.Fprint(w, c.Intro+"Commands:\n")
	c.list(w, c.Commands)
	if c.Default.Flags != nil {
		fmt.Fprintf(w, "\nFlags of %s:\n", c.Default.Name)
		fs := c.FlagSet(c.Default)
		c.Default.Flags(fs)
		printFlags(w, fs)
	}
	fmt.Fprintf(w, "\nRun \"%s help COMMAND\" for a command's flags.\n", c.Name)
}

// list prints cmds, one line each.
func (c *CLI) list(w io.Writer, cmds []*Command) {
	tw := tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
	for _, cmd := range cmds {
		fmt.Fprintf(tw, "  %s\t%s\n", cmd.Name, cmd.Summary)
	}
	tw.Flush()
}

// commandUsage is the help of one command: its usage line, what it does,
// its flags, and the commands that extend its name.
func (c *CLI) commandUsage(w io.Writer, cmd *Command, fs *flag.FlagSet) {
	fmt.Fprintf(w, "Usage: %s %s %s\n\n", c.Name, cmd.Name, cmd.Synopsis)
	about := cmd.About
	if about == "" {
		about = strings.ToUpper(cmd.Summary[:1]) + cmd.Summary[1:] + "."
	}
	fmt.Fprintln(w, about)
	if hasFlags(fs) {
		fmt.Fprintln(w, "\nFlags:")
		printFlags(w, fs)
	}
	if more := c.group(cmd.Name); len(more) > 0 {
		fmt.Fprintln(w, "\nCommands:")
		c.list(w, more)
	}
}

// groupUsage is the help of a word that only starts commands' names.
func (c *CLI) groupUsage(w io.Writer, word string, group []*Command) {
	fmt.Fprintf(w, "Usage: %s %s COMMAND [arguments]\n\nCommands:\n", c.Name, word)
	c.list(w, group)
	fmt.Fprintf(w, "\nRun \"%s help %s COMMAND\" for a command's flags.\n", c.Name, word)
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

// Help is the command "help [COMMAND]": the program's help, or a
// command's, which is what it answers to -h.
func Help(summary string) *Command {
	return &Command{Name: "help", Synopsis: "[COMMAND]", Summary: summary, Run: runHelp}
}

func runHelp(ctx context.Context, c *CLI, cmd *Command, args []string) int {
	fs := c.FlagSet(cmd)
	if code, ok := c.Parse(cmd, fs, args); !ok {
		return code
	}
	args = fs.Args()
	if len(args) == 0 {
		c.usage(c.Stdout)
		return ExitOK
	}
	if target, rest := c.find(args); target != nil && len(rest) == 0 {
		// A command's help is what it answers to -h.
		return target.Run(ctx, c, target, []string{"-h"})
	}
	if group := c.group(strings.Join(args, " ")); len(group) > 0 {
		c.groupUsage(c.Stdout, strings.Join(args, " "), group)
		return ExitOK
	}
	fmt.Fprintf(c.Stderr, "%s help: no command %q (see %s help)\n", c.Name, strings.Join(args, " "), c.Name)
	return ExitUsage
}
