package devidp

import (
	"context"
	"crypto/subtle"
	"html/template"
	"net/http"
)

// loginPath is where op sends a person to sign in.
const loginPath = "/login"

// loginPage signs a person in as a user of the file: one without a
// password by choosing their name, one with a password by typing it.
type loginPage struct {
	store    *storage
	callback func(ctx context.Context, id string) string // op's callback URL of a sign-in
}

var loginTemplate = template.Must(template.New("login").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>Sign in: toolgate-dev-idp</title></head>
<body style="font-family: system-ui, sans-serif; max-width: 28rem; margin: 2rem auto">
<h1>Sign in</h1>
<p>toolgate-dev-idp, a development identity provider: {{.Client}} asks who you are.</p>
{{if .Error}}<p role="alert"><strong>{{.Error}}</strong></p>{{end}}
{{if .Choose}}<form method="post" name="choose">
<input type="hidden" name="id" value="{{.ID}}">
{{range .Choose}}<p><button type="submit" name="username" value="{{.ID}}">{{.ID}}{{if .Groups}} ({{range $i, $g := .Groups}}{{if $i}}, {{end}}{{$g}}{{end}}){{end}}</button></p>
{{end}}</form>{{end}}
{{if .WithPassword}}<form method="post" name="password">
<input type="hidden" name="id" value="{{.ID}}">
<p><label>Username <input name="username" autocomplete="username" required></label></p>
<p><label>Password <input name="password" type="password" autocomplete="current-password" required></label></p>
<p><button type="submit">Sign in</button></p>
</form>{{end}}
</body></html>
`))

type loginData struct {
	ID           string
	Client       string
	Error        string
	Choose       []User
	WithPassword bool
}

func (l *loginPage) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Frame-Options", "DENY")
	id := r.FormValue("id")
	a, err := l.store.request(id)
	if err != nil {
		http.Error(w, "This sign-in is unknown or over: start again from the application.", http.StatusNotFound)
		return
	}
	switch r.Method {
	case http.MethodGet:
		l.render(w, http.StatusOK, a, "")
	case http.MethodPost:
		name := r.PostFormValue("username")
		u, ok := l.store.users[name]
		switch {
		case !ok:
			l.render(w, http.StatusUnauthorized, a, "No such user.")
			return
		case u.Password == "" && r.PostForm.Has("password"):
			l.render(w, http.StatusUnauthorized, a, "This user has no password: choose them above.")
			return
		case u.Password != "" && subtle.ConstantTimeCompare([]byte(u.Password), []byte(r.PostFormValue("password"))) != 1:
			l.render(w, http.StatusUnauthorized, a, "Wrong username or password.")
			return
		}
		if err := l.store.signIn(id, u.ID); err != nil {
			http.Error(w, "This sign-in is unknown or over: start again from the application.", http.StatusNotFound)
			return
		}
		http.Redirect(w, r, l.callback(r.Context(), id), http.StatusFound)
	default:
		w.Header().Set("Allow", "GET, POST")
		http.Error(w, "GET or POST", http.StatusMethodNotAllowed)
	}
}

func (l *loginPage) render(w http.ResponseWriter, status int, a *authRequest, msg string) {
	d := loginData{ID: a.id, Client: a.clientID, Error: msg}
	for _, u := range l.store.usersInOrder {
		if u.Password == "" {
			d.Choose = append(d.Choose, u)
		} else {
			d.WithPassword = true
		}
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_ = loginTemplate.Execute(w, d)
}
