package mcpupstream

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/upstream"
)

// conn is one connection to an upstream server: its session, and for a
// command, the process.
type conn struct {
	session *mcp.ClientSession
	proc    *process // nil unless the server is a command
	// http: a request's leaving is seen by the HTTP client (httptrace)
	// rather than by the connection (sentConn).
	http bool
	// ended is closed when the session ends, for whatever reason.
	ended chan struct{}
}

func (c *conn) isEnded() bool {
	select {
	case <-c.ended:
		return true
	default:
		return false
	}
}

// dialed is what connecting needs besides the transport: the process to
// stop should the handshake fail, and the secrets of this connection.
type dialed struct {
	transport mcp.Transport
	proc      *process
	http      bool
	secrets   []string
	// exchange is the TokenExchange its server's tools carry, its secret read.
	exchange *registry.TokenExchange
}

// transport makes the transport of one connection to s.
func (s *server) transport() (dialed, error) {
	cfg := &s.cfg
	switch {
	case len(cfg.Command) > 0:
		env, secrets, err := s.environ()
		if err != nil {
			return dialed{}, err
		}
		cmd := exec.Command(cfg.Command[0], cfg.Command[1:]...)
		cmd.Env = env
		cmd.Stderr = &tailBuffer{max: stderrTail}
		// The process can only end if its pipes close: its children could
		// keep them open past its own end, and they are killed with it.
		cmd.WaitDelay = s.opts.StopTimeout
		setProcessGroup(cmd)
		p := &process{cmd: cmd, stopTimeout: s.opts.StopTimeout}
		t := &mcp.CommandTransport{Command: cmd, TerminateDuration: s.opts.StopTimeout}
		return dialed{transport: sentTransport{procTransport{t, p}}, proc: p, secrets: secrets}, nil
	case cfg.URL != "":
		guard, err := upstream.NewOriginTransport(cfg.origin(), cfg.HTTPTransport)
		if err != nil {
			return dialed{}, err
		}
		rt := guard
		var secrets []string
		if c := cfg.Credential; c != nil {
			value, _, err := s.resolve(c.Value, "credential")
			if err != nil {
				return dialed{}, err
			}
			if !validHeaderValue(value) {
				return dialed{}, errors.New("credential: the value is empty, or holds a line break or another control character")
			}
			// A credential is a secret wherever it comes from.
			secrets = append(secrets, value)
			if c.Scheme != "" {
				value = c.Scheme + " " + value
			}
			rt = headerTransport{header: c.Header, value: value, next: rt}
		}
		exchange, more, err := s.exchangeOf()
		if err != nil {
			return dialed{}, err
		}
		if exchange != nil {
			secrets = append(secrets, more...)
			rt = callerTransport{withCredential: rt, next: guard}
		}
		client := &http.Client{
			Transport: rt,
			// A redirect could lead anywhere, with whatever the request carried.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
		return dialed{transport: &mcp.StreamableClientTransport{Endpoint: cfg.URL, HTTPClient: client}, http: true, secrets: secrets, exchange: exchange}, nil
	}
	t := cfg.Transport()
	if t == nil {
		return dialed{}, errors.New("the server's Transport returned none")
	}
	if _, ok := t.(*mcp.StreamableClientTransport); ok {
		return dialed{transport: t, http: true}, nil
	}
	return dialed{transport: sentTransport{t}}, nil
}

// environ is the environment of a command: PATH and HOME from the
// gateway's, then what the config names. secrets are the values read from
// the gateway's environment or from files.
func (s *server) environ() (env, secrets []string, err error) {
	vars := map[string]string{}
	for _, name := range []string{"PATH", "HOME"} {
		if v, ok := s.opts.LookupEnv(name); ok {
			vars[name] = v
		}
	}
	for name, v := range s.cfg.Env {
		value, secret, err := s.resolve(v, "env."+name)
		if err != nil {
			return nil, nil, err
		}
		vars[name] = value
		if secret {
			secrets = append(secrets, value)
		}
	}
	for name, v := range vars {
		env = append(env, name+"="+v)
	}
	slices.Sort(env)
	return env, secrets, nil
}

// conventionalEnvName is the usual shape of an environment variable's name.
// A name of another shape is not quoted in errors: it may be the value
// itself, pasted in the wrong place.
var conventionalEnvName = regexp.MustCompile(`^[A-Z_][A-Z0-9_]{0,127}$`)

// resolve reads a Value. secret says it was read from the environment or a
// file. Errors name where the value was looked for, never the value.
func (s *server) resolve(v Value, field string) (value string, secret bool, err error) {
	switch {
	case v.Env != "":
		name := "the environment variable it names"
		if conventionalEnvName.MatchString(v.Env) {
			name = "the environment variable " + v.Env
		}
		value, ok := s.opts.LookupEnv(v.Env)
		if !ok {
			return "", false, fmt.Errorf("%s: %s is not set", field, name)
		}
		return value, true, nil
	case v.File != "":
		raw, err := s.opts.ReadFile(v.File)
		if err != nil {
			return "", false, fmt.Errorf("%s: cannot read %s: %s", field, v.File, fileProblem(err))
		}
		value := strings.TrimSpace(string(raw))
		if value == "" {
			return "", false, fmt.Errorf("%s: %s is empty", field, v.File)
		}
		return value, true, nil
	}
	return v.Literal, false, nil
}

// fileProblem says why a file could not be read, without the error's own
// text, which repeats the path.
func fileProblem(err error) string {
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "no such file"
	case errors.Is(err, os.ErrPermission):
		return "permission denied"
	}
	return "read error"
}

// validHeaderValue reports whether s can be sent as a header value as it
// is: nothing that could end the header early.
func validHeaderValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return s != ""
}

// headerTransport adds the credential to every request. It sits before the
// origin guard, which refuses any request to another origin before a byte
// leaves, so the credential reaches the server's origin only.
type headerTransport struct {
	header, value string
	next          http.RoundTripper
}

func (t headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context())
	r.Header.Set(t.header, t.value)
	return t.next.RoundTrip(r)
}

// sentKey marks, in the context of one tools/call, where to record that
// its request left: an *atomic.Bool.
type sentKey struct{}

// sentTransport's connections record, for each tools/call written whole,
// that it left, so a failure after it can be told from one before it.
type sentTransport struct{ mcp.Transport }

func (t sentTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return sentConn{c}, nil
}

type sentConn struct{ mcp.Connection }

func (c sentConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	err := c.Connection.Write(ctx, msg)
	if err == nil {
		if sent, ok := ctx.Value(sentKey{}).(*atomic.Bool); ok {
			if req, ok := msg.(*jsonrpc.Request); ok && req.Method == "tools/call" {
				sent.Store(true)
			}
		}
	}
	return err
}

// procTransport records the process a command transport started, so that
// it can be stopped even while the handshake is still under way.
type procTransport struct {
	*mcp.CommandTransport
	proc *process
}

func (t procTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.CommandTransport.Connect(ctx)
	if t.Command.Process != nil {
		t.proc.started.Store(t.Command.Process)
	}
	return c, err
}

// stderrTail is how much of a process's last standard error is kept, to
// tell the operator why it stopped.
const stderrTail = 4 << 10

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}

// process is a command's process, in a process group of its own so that
// whatever it starts is stopped with it.
type process struct {
	cmd         *exec.Cmd
	stopTimeout time.Duration
	started     atomic.Pointer[os.Process]
	stopOnce    sync.Once
}

// stop ends the process group: SIGTERM, then SIGKILL after stopTimeout if
// the process is still there, and SIGKILL to whatever of its group is left
// once it is gone. closeSession closes the session over its pipes, which
// waits for the process to exit. Only the first stop signals anything.
func (p *process) stop(closeSession func()) {
	proc := p.started.Load()
	first := false
	p.stopOnce.Do(func() { first = true })
	if proc == nil || !first {
		closeSession()
		return
	}
	signalGroup(proc, sigTerm)
	done := make(chan struct{})
	go func() {
		closeSession()
		close(done)
	}()
	t := time.NewTimer(p.stopTimeout)
	select {
	case <-done:
		t.Stop()
	case <-t.C:
		signalGroup(proc, sigKill)
		<-done
	}
	signalGroup(proc, sigKill)
}

// terminate asks the process group to end (SIGTERM), for a handshake that
// hangs: the SDK, failing it, waits for the process and kills it if need be.
func (p *process) terminate() {
	if proc := p.started.Load(); proc != nil {
		signalGroup(proc, sigTerm)
	}
}

// killRest kills what is left of the group once the process itself is
// gone: what it started and left behind.
func (p *process) killRest() {
	if proc := p.started.Load(); proc != nil {
		p.stopOnce.Do(func() {})
		signalGroup(proc, sigKill)
	}
}

// stderr is the end of what the process wrote to standard error.
func (p *process) stderr() string {
	if b, ok := p.cmd.Stderr.(*tailBuffer); ok {
		return b.String()
	}
	return ""
}
