package console

import (
	"html/template"

	"github.com/blackboardkernel/bk/internal/inspect"
)

// pages are the console's pages. html/template escapes every value for
// where it lands; stored text is also passed through inspect.Inert, so
// that a terminal escape or a bidirectional override reads as text.
var pages = template.Must(template.New("console").Funcs(template.FuncMap{"inert": inspect.Inert}).Parse(`
{{define "head"}}<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.}} · bk serve</title>
<link rel="stylesheet" href="/style.css"></head><body>{{end}}

{{define "who"}}<header><a href="/">inbox</a> · signed in as <b>{{inert .}}</b></header>{{end}}

{{define "inbox"}}{{template "head" "approvals"}}{{template "who" .Identity}}
<h1>Approvals pending{{with .Namespace}} in {{inert .}}{{end}}</h1>
<p class="muted">as of {{.Now}}; oldest first</p>
{{range .Groups}}<section><h2>namespace {{inert .Namespace}}</h2>
{{range .Items}}<article id="{{.ActionID}}">
<h3>{{inert (or .Tool .Kind)}} <span class="muted">waiting {{.Waited}}</span></h3>
<dl>
<dt>action</dt><dd><a href="/trace?record={{.ActionID}}">{{inert .ActionID}}</a></dd>
<dt>trace</dt><dd><a href="/trace?id={{.TraceID}}">{{inert .TraceID}}</a> · <a href="/effects?id={{.TraceID}}">its effects</a></dd>
<dt>waiting</dt><dd class="waited">{{.Waited}}, since {{.Since}}</dd>
<dt>why it waits</dt><dd>{{inert .Reason}}</dd>
<dt>budget spent</dt><dd class="budget">{{range .Budget}}<div>run <b>{{inert .Run}}</b>: {{range $i, $f := .Figures}}{{if $i}}, {{end}}{{$f}}{{else}}nothing spent{{end}}; pressure {{.Pressure}}{{with .Taken}} <span class="muted">(at {{.}})</span>{{end}}</div>{{else}}no budget applies to this call{{end}}</dd>
<dt>arguments <span class="muted">as the committed action holds them</span></dt><dd><pre class="args">{{.ArgsJSON}}</pre></dd>
<dt>digest</dt><dd><code>{{.Digest}}</code></dd>
</dl>
<h4>What it rests on</h4>
{{if .Grounds}}<table><tr><th>as</th><th>record</th><th>what</th><th>age</th><th>checks passed</th><th>flags</th></tr>
{{range .Grounds}}<tr><td>{{inert .Relation}}</td><td><a href="/trace?record={{.Record}}">{{inert .Record}}</a></td><td>{{inert .Summary}}</td><td>{{.Age}}</td><td>{{inert .Checks}}</td><td>{{with .Flags}}<span class="refused">{{inert .}}</span>{{else}}none{{end}}</td></tr>
{{end}}</table>{{else}}<p>no belief: a tool that needs none</p>{{end}}
<p>rules and bindings, passed: {{range $i, $r := .Rules}}{{if $i}}; {{end}}{{inert $r}}{{else}}none recorded{{end}}</p>
<p>constraints in force, passed: {{range $i, $c := .Constraints}}{{if $i}}, {{end}}{{inert $c}}{{else}}none{{end}}</p>
<details><summary>the whole explanation</summary><pre>{{.Evidence}}</pre></details>
<form method="post" action="/decide">
<input type="hidden" name="csrf" value="{{$.CSRF}}">
<input type="hidden" name="namespace" value="{{.Namespace}}">
<input type="hidden" name="trace" value="{{.TraceID}}">
<input type="hidden" name="action" value="{{.ActionID}}">
<input type="hidden" name="digest" value="{{.Digest}}">
<label>note <input type="text" name="note" maxlength="2000"></label>
<button name="decision" value="approve">approve</button>
<button name="decision" value="deny">deny</button>
</form></article>
{{end}}</section>
{{else}}<p>No approvals pending.</p>
{{end}}</body></html>{{end}}

{{define "trace"}}{{template "head" "trace"}}{{template "who" .Identity}}
<h1>Trace {{inert .Trace}}</h1>
<p>outcome: {{inert .Outcome}}</p>
{{with .Explanation}}<h2>Explanation of {{inert $.Record}}</h2><pre>{{.}}</pre>{{end}}
<p><a href="/effects?id={{.Trace}}">the trace's effects and their attempts</a></p>
<h2>Timeline</h2>
<figure class="timeline">{{.Picture}}</figure>
<details><summary>the timeline as text</summary><pre>{{.Timeline}}</pre></details>
</body></html>{{end}}

{{define "effects"}}{{template "head" "effects"}}{{template "who" .Identity}}
<h1>Effects of trace {{inert .Trace}}</h1>
<p><a href="/trace?id={{.Trace}}">the trace's timeline</a></p>
{{range .Effects}}<article class="effect" id="{{.ActionID}}">
<h3>{{inert .Tool}} <span class="muted">{{inert .Outcome}}{{with .Code}} {{inert (print .)}}{{end}}</span></h3>
<dl>
<dt>action</dt><dd><a href="/trace?record={{.ActionID}}">{{inert .ActionID}}</a></dd>
<dt>attempts</dt><dd>{{.Attempts}}, the last record at {{.Last}}</dd>
</dl>
<table class="steps"><tr><th>record</th><th>at</th><th>status</th><th>attempt</th><th>lease until</th><th>code</th><th>result or failure</th></tr>
{{range $st := .Steps}}<tr class="step {{.Status}}"><td><a href="/trace?record={{.Record}}">{{inert .Record}}</a></td><td>{{.Time}}</td><td>{{inert .Status}}</td>
<td>{{if .Attempt}}{{.Attempt}}{{end}}</td><td>{{.Lease}}</td><td>{{with .Code}}<span{{if ne (print .) "EFFECT_SUCCEEDED"}} class="refused"{{end}}>{{inert (print .)}}</span>{{end}}</td>
<td>{{with .PreviousError}}<div class="refused">the attempt before failed: {{inert .}}</div>{{end}}{{with .Output}}<pre>{{.}}</pre>{{end}}{{with .Error}}<span class="refused">{{inert .}}</span>{{end}}{{with .Category}} <span class="muted">category {{inert .}}{{if $st.Retryable}}, retryable{{end}}</span>{{end}}{{with .Approval}}<div class="muted">under approval {{inert .}}{{with $st.Approver}} by {{inert .}}{{end}}{{with $st.Note}}: {{inert .}}{{end}}</div>{{end}}</td></tr>
{{end}}</table></article>
{{else}}<p>No effects: the gate ran nothing in this trace.</p>
{{end}}</body></html>{{end}}

{{define "done"}}{{template "head" .Verb}}{{template "who" .Identity}}
<h1>{{.Verb}}</h1>
<p>{{inert (or .Item.Tool .Item.Kind)}} <code>{{inert .Item.ActionID}}</code> of trace
<a href="/trace?id={{.Item.TraceID}}">{{inert .Item.TraceID}}</a> is {{.Verb}}: the application's gate acts on it when it next looks.</p>
<p><a href="/">back to the inbox</a></p></body></html>{{end}}

{{define "error"}}{{template "head" .Text}}
<h1>{{.Status}} {{.Text}}</h1><p class="refused">{{.Message}}</p>
<p><a href="/">back to the inbox</a></p></body></html>{{end}}
`))

const styleCSS = `body{font:15px/1.4 system-ui,sans-serif;max-width:60em;margin:1em auto;padding:0 1em}
header{border-bottom:1px solid #ccc;margin-bottom:1em}
article{border:1px solid #ccc;border-radius:4px;padding:.5em 1em;margin:1em 0}
pre{background:#f6f6f6;padding:.5em;overflow-x:auto;white-space:pre-wrap}
table{border-collapse:collapse}td,th{border:1px solid #ddd;padding:2px 6px;text-align:left;vertical-align:top}
figure.timeline{margin:0;overflow-x:auto}figure.timeline svg{max-width:100%;height:auto}
dl{display:grid;grid-template-columns:minmax(7em,11em) minmax(0,1fr);gap:3px 1em}dt{font-weight:bold}dd{margin:0;min-width:0}
dd pre{margin:0}code{overflow-wrap:anywhere}.muted{color:#666;font-weight:normal}.refused{color:#a00}
table.steps{width:100%}table.steps td:last-child{width:40%}table.steps pre{margin:0;overflow-wrap:anywhere}
`
