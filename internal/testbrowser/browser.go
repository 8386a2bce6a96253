// Package testbrowser drives HTML pages in tests as a browser with
// JavaScript off would: it keeps cookies, follows redirects, reads the
// forms of a page (golang.org/x/net/html) and submits them with the fields
// a person would send, and the Origin header a browser adds to a POST.
package testbrowser

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// Browser is one person's browser: one cookie jar.
type Browser struct {
	t      testing.TB
	Client *http.Client
}

// New returns a browser with an empty cookie jar.
func New(t testing.TB) *Browser {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &Browser{t: t, Client: &http.Client{Jar: jar}}
}

// Page is a page as the browser got it, after any redirects.
type Page struct {
	b      *Browser
	Status int
	Header http.Header
	URL    *url.URL
	Body   string
	doc    *html.Node
}

// Get opens a page.
func (b *Browser) Get(rawURL string) *Page {
	b.t.Helper()
	req, err := http.NewRequest(http.MethodGet, rawURL, nil)
	if err != nil {
		b.t.Fatal(err)
	}
	return b.Do(req)
}

// Do sends req as the browser and reads the page it ends on.
func (b *Browser) Do(req *http.Request) *Page {
	b.t.Helper()
	resp, err := b.Client.Do(req)
	if err != nil {
		b.t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		b.t.Fatal(err)
	}
	p := &Page{b: b, Status: resp.StatusCode, Header: resp.Header, URL: resp.Request.URL, Body: string(body)}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		if p.doc, err = html.Parse(strings.NewReader(p.Body)); err != nil {
			b.t.Fatalf("%s is not HTML: %v", p.URL, err)
		}
	}
	return p
}

// Post sends a form as a browser would from the page at from: with Origin
// set to from's origin. Tests of forgery send other headers with Do.
func (b *Browser) Post(from *url.URL, action string, fields url.Values) *Page {
	b.t.Helper()
	target, err := from.Parse(action)
	if err != nil {
		b.t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, target.String(), strings.NewReader(fields.Encode()))
	if err != nil {
		b.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", from.Scheme+"://"+from.Host)
	return b.Do(req)
}

// Cookie returns the browser's cookie name for u, or nil.
func (b *Browser) Cookie(u *url.URL, name string) *http.Cookie {
	for _, c := range b.Client.Jar.Cookies(u) {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// Form is a form of a page with the values it would send as it stands.
type Form struct {
	page   *Page
	Method string
	Action string // as written; "" posts to the page itself
	Values url.Values
	// Buttons are the names and values of the form's submit buttons.
	Buttons []Button
}

// Button is a submit button.
type Button struct{ Name, Value, Label string }

// Forms returns every form of the page.
func (p *Page) Forms() []*Form {
	var out []*Form
	walk(p.doc, func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data == "form" {
			out = append(out, p.readForm(n))
		}
	})
	return out
}

// Form returns the first form with a field or button named name; it fails
// the test when there is none.
func (p *Page) Form(name string) *Form {
	p.b.t.Helper()
	for _, f := range p.Forms() {
		if _, ok := f.Values[name]; ok {
			return f
		}
		for _, btn := range f.Buttons {
			if btn.Name == name {
				return f
			}
		}
	}
	p.b.t.Fatalf("no form on %s has a field %q:\n%s", p.URL, name, p.Body)
	return nil
}

// HasForm reports whether a form of the page has a field or button named name.
func (p *Page) HasForm(name string) bool {
	for _, f := range p.Forms() {
		if _, ok := f.Values[name]; ok {
			return true
		}
		for _, btn := range f.Buttons {
			if btn.Name == name {
				return true
			}
		}
	}
	return false
}

// Text is the page's text, tags left out and entities decoded.
func (p *Page) Text() string {
	var b strings.Builder
	walk(p.doc, func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
	})
	return b.String()
}

// Elements returns the elements named tag.
func (p *Page) Elements(tag string) []*html.Node {
	var out []*html.Node
	walk(p.doc, func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data == tag {
			out = append(out, n)
		}
	})
	return out
}

func (p *Page) readForm(n *html.Node) *Form {
	f := &Form{page: p, Method: strings.ToUpper(attr(n, "method")), Action: attr(n, "action"), Values: url.Values{}}
	if f.Method == "" {
		f.Method = http.MethodGet
	}
	walk(n, func(c *html.Node) {
		if c.Type != html.ElementNode {
			return
		}
		name := attr(c, "name")
		switch c.Data {
		case "input":
			switch typ := attr(c, "type"); typ {
			case "radio", "checkbox":
				if _, ok := f.Values[name]; !ok {
					f.Values[name] = nil
				}
				if hasAttr(c, "checked") {
					f.Values.Add(name, attr(c, "value"))
				}
			case "submit":
				f.Buttons = append(f.Buttons, Button{Name: name, Value: attr(c, "value"), Label: attr(c, "value")})
			default:
				if name != "" {
					f.Values.Set(name, attr(c, "value"))
				}
			}
		case "textarea":
			if name != "" {
				f.Values.Set(name, text(c))
			}
		case "button":
			if attr(c, "type") == "" || attr(c, "type") == "submit" {
				f.Buttons = append(f.Buttons, Button{Name: name, Value: attr(c, "value"), Label: text(c)})
			}
		}
	})
	return f
}

// Set sets a field to value, as a person typing or choosing would.
func (f *Form) Set(name, value string) *Form {
	f.Values.Set(name, value)
	return f
}

// Submit sends the form with the button labelled label (or the only
// button, when label is ""), as the browser would from the form's page.
func (f *Form) Submit(label string) *Page {
	b := f.page.b
	b.t.Helper()
	values := url.Values{}
	for k, vs := range f.Values {
		for _, v := range vs {
			values.Add(k, v)
		}
	}
	found := label == "" && len(f.Buttons) <= 1
	for _, btn := range f.Buttons {
		if btn.Label == label || (label == "" && found) {
			if btn.Name != "" {
				values.Set(btn.Name, btn.Value)
			}
			found = true
			break
		}
	}
	if !found {
		b.t.Fatalf("the form on %s has no button %q", f.page.URL, label)
	}
	return b.Post(f.page.URL, f.Action, values)
}

func walk(n *html.Node, fn func(*html.Node)) {
	if n == nil {
		return
	}
	fn(n)
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		walk(c, fn)
	}
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func hasAttr(n *html.Node, key string) bool {
	for _, a := range n.Attr {
		if a.Key == key {
			return true
		}
	}
	return false
}

func text(n *html.Node) string {
	var b strings.Builder
	walk(n, func(c *html.Node) {
		if c.Type == html.TextNode {
			b.WriteString(c.Data)
		}
	})
	return strings.TrimSpace(b.String())
}
