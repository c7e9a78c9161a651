/// The status page: one self-contained HTML file (no CDN, no build step). Its script loads
/// `/api/status`, then follows `/events` and redraws on each document; every value goes into
/// the page as text (device names come from peers' certificates and are never markup).
enum StatusPage {
    static let html = #"""
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>Peerlog</title>
        <style>
          :root { --bg:#f6f7f9; --card:#fff; --ink:#1d232b; --mute:#6b7480; --line:#e1e5ea;
                  --ok:#1f9d55; --warn:#c98a00; --bad:#c4372f; --accent:#2f6fdb; }
          * { box-sizing: border-box; }
          body { margin:0; font:14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; background:var(--bg); color:var(--ink); }
          header { display:flex; align-items:center; gap:16px; padding:14px 22px; background:#17202b; color:#fff; }
          header h1 { margin:0; font-size:18px; font-weight:600; }
          header .who { color:#b8c2cf; font-size:12px; font-family:ui-monospace, monospace; }
          #live { margin-left:auto; font-size:12px; padding:3px 10px; border-radius:10px; background:#3a4350; }
          #live.on { background:var(--ok); }
          main { display:grid; grid-template-columns: repeat(auto-fit, minmax(420px, 1fr)); gap:16px; padding:16px 22px; }
          @media (min-width: 1300px) { #groups-card { grid-column: span 2; } }
          section { background:var(--card); border:1px solid var(--line); border-radius:8px; padding:12px 16px; }
          section h2 { margin:0 0 8px; font-size:13px; text-transform:uppercase; letter-spacing:.04em; color:var(--mute); }
          table { width:100%; border-collapse:collapse; }
          th, td { text-align:left; padding:5px 6px; border-top:1px solid var(--line); vertical-align:top; }
          th { color:var(--mute); font-weight:500; font-size:12px; border-top:none; }
          .mono { font-family:ui-monospace, monospace; font-size:12px; }
          .mute { color:var(--mute); }
          .state { font-weight:600; }
          .state.connected { color:var(--ok); } .state.connecting, .state.discovered { color:var(--warn); }
          .state.backoff { color:var(--bad); }
          .group { border-top:1px solid var(--line); padding:10px 0; }
          .group:first-of-type { border-top:none; }
          .group .title { display:flex; align-items:baseline; gap:10px; }
          .group .name { font-weight:600; font-size:15px; }
          .figures { display:flex; gap:22px; margin:6px 0; }
          .figure b { display:block; font-size:22px; font-weight:600; }
          .figure span { color:var(--mute); font-size:12px; }
          .bar { height:8px; background:var(--line); border-radius:4px; overflow:hidden; min-width:120px; }
          .bar i { display:block; height:100%; background:var(--accent); }
          .bar.done i { background:var(--ok); }
          svg { width:100%; height:160px; display:block; }
          .empty { color:var(--mute); font-style:italic; }
        </style>
        </head>
        <body>
        <header>
          <h1 id="name">Peerlog</h1>
          <div class="who">device <span id="device">…</span><br>identity <span id="identity">…</span></div>
          <div class="who">listening <span id="listening">…</span><br><span id="discovery"></span></div>
          <div id="live">connecting…</div>
        </header>
        <main>
          <section id="groups-card"><h2>Groups</h2><div id="groups"></div></section>
          <section id="peers-card"><h2>Peers</h2>
            <table id="peers"><thead><tr><th>peer</th><th>state</th><th>found by</th><th>since / error</th></tr></thead>
            <tbody></tbody></table></section>
          <section><h2>Commits per second</h2><svg id="chart" viewBox="0 0 600 160" preserveAspectRatio="none"></svg>
            <div class="mute" id="chart-note"></div></section>
          <section id="blobs-card"><h2>Files and blobs</h2><div class="mute" id="blobs-summary"></div>
            <table id="blobs"><thead><tr><th>blob</th><th>progress</th><th>held</th><th>rate</th></tr></thead>
            <tbody></tbody></table></section>
          <section><h2>Recently closed connections</h2>
            <table id="closed"><thead><tr><th>when</th><th>peer</th><th>why</th></tr></thead><tbody></tbody></table></section>
        </main>
        <script>
        "use strict";
        const token = new URLSearchParams(location.search).get("token");
        const query = token ? "?token=" + encodeURIComponent(token) : "";
        const $ = (id) => document.getElementById(id);
        const short = (key) => key ? key.slice(0, 12) + "…" : "?";
        const names = {};

        // Builds an element; strings become text nodes, never markup.
        function el(tag, attrs, ...children) {
          const node = document.createElement(tag);
          for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
          for (const c of children) node.append(c instanceof Node ? c : document.createTextNode(String(c)));
          return node;
        }
        function ago(ms) {
          const s = Math.max(0, Math.round((Date.now() - ms) / 1000));
          return s < 60 ? s + " s ago" : s < 3600 ? Math.round(s / 60) + " min ago" : Math.round(s / 3600) + " h ago";
        }
        function peerLabel(device) { return names[device] ? names[device] + " (" + short(device) + ")" : short(device); }

        function renderHeader(s) {
          names[s.device] = s.name + ", this device";
          $("name").textContent = s.name || "Peerlog";
          document.title = "Peerlog: " + (s.name || s.device);
          $("device").textContent = s.device;
          $("identity").textContent = s.identity;
          $("listening").textContent = s.listening || "not listening";
          $("discovery").textContent = s.discovery ? (s.discoveryUnavailable ? "LAN discovery unavailable: " + s.discoveryUnavailable : "LAN discovery on") : "LAN discovery off";
        }

        function renderPeers(s) {
          const body = $("peers").tBodies[0];
          body.replaceChildren();
          for (const p of s.peers) if (p.device && p.name) names[p.device] = p.name;
          if (s.peers.length === 0) body.append(el("tr", {}, el("td", { colspan: 4, class: "empty" }, "no peers yet")));
          for (const p of s.peers) {
            const detail = p.state === "connected" && p.connectedSince ? "connected " + ago(p.connectedSince)
              : [p.lastError, p.retryInMs != null ? "retry in " + (p.retryInMs / 1000).toFixed(1) + " s" : null].filter(Boolean).join("; ");
            body.append(el("tr", { "data-device": p.device || "", "data-state": p.state },
              el("td", {}, el("div", {}, p.name || "unknown"), el("div", { class: "mono mute" }, p.device ? short(p.device) + " " : "", p.address)),
              el("td", { class: "state " + p.state }, p.state + " (" + p.direction + ")"),
              el("td", {}, p.source),
              el("td", { class: "mute" }, detail || "")));
          }
        }

        function sequencerLine(q) {
          if (!q) return "not committed yet";
          let text = q.authority === "relay" ? "relay " + short(q.devices[0]) + (q.address ? " at " + q.address : "")
            : q.authority === "solo" ? "solo: " + peerLabel(q.devices[0])
            : "elected among " + q.devices.length + " voters";
          if (q.role) text += " · this voter: " + q.role + ", term " + q.term + ", leader " + (q.leader ? peerLabel(q.leader) : "none");
          return text;
        }

        function renderGroups(s) {
          const box = $("groups");
          box.replaceChildren();
          if (s.groups.length === 0) box.append(el("div", { class: "empty" }, "no groups"));
          for (const g of s.groups) {
            const rows = el("tbody");
            for (const p of g.peers) {
              const best = Math.max(g.committed, p.peerCommitted || 0);
              const pct = best === 0 ? 100 : Math.floor(100 * g.committed / best);
              const text = p.behind > 0 ? "catching up: " + g.committed + " / " + p.peerCommitted
                : p.ahead > 0 ? "peer is " + p.ahead + " behind" : "in sync";
              rows.append(el("tr", { "data-peer": p.device },
                el("td", {}, peerLabel(p.device)),
                el("td", {}, el("div", { class: "bar" + (pct >= 100 ? " done" : "") }, el("i", { style: "width:" + pct + "%" }))),
                el("td", { class: "lag" }, text),
                el("td", { class: "mute" }, "in " + p.itemsReceived + " · out " + p.itemsSent)));
            }
            if (g.peers.length === 0) rows.append(el("tr", {}, el("td", { colspan: 4, class: "empty" }, "no peer syncing this group now")));
            const figures = el("div", { class: "figures" },
              el("div", { class: "figure" }, el("b", { class: "committed" }, g.committed), el("span", {}, "committed")),
              el("div", { class: "figure" }, el("b", { class: "tentative" }, g.tentative), el("span", {}, "tentative")));
            if (g.waitingForKey != null) figures.append(el("div", { class: "figure" }, el("b", {}, g.waitingForKey), el("span", {}, "waiting for a key")));
            if (g.offline) figures.append(el("div", { class: "figure" }, el("b", {}, g.offline.waiting), el("span", {}, "own writes waiting (of " + g.offline.maxWaiting + ")")));
            box.append(el("div", { class: "group", "data-group": g.id },
              el("div", { class: "title" }, el("span", { class: "name" }, g.name || "(unnamed)"), el("span", { class: "mono mute" }, short(g.id))),
              figures,
              el("div", { class: "mute sequencer" }, "sequencer: " + sequencerLine(g.sequencer)),
              el("table", { class: "lags" }, el("thead", {}, el("tr", {}, el("th", {}, "peer"), el("th", {}, "catch-up"), el("th", {}, "lag"), el("th", {}, "items"))), rows)));
          }
        }

        function renderClosed(s) {
          const body = $("closed").tBodies[0];
          body.replaceChildren();
          const recent = s.recentlyClosed.slice(-6).reverse();
          if (recent.length === 0) body.append(el("tr", {}, el("td", { colspan: 3, class: "empty" }, "none")));
          for (const c of recent) body.append(el("tr", {}, el("td", { class: "mute" }, ago(c.at)), el("td", {}, c.device ? peerLabel(c.device) : c.address), el("td", {}, c.reason)));
        }

        // Blob fetches: a bar each, with the rate differenced between documents.
        const blobSeen = {};
        function bytes(n) {
          return n >= 1e9 ? (n / 1e9).toFixed(2) + " GB" : n >= 1e6 ? (n / 1e6).toFixed(1) + " MB" : n >= 1e3 ? (n / 1e3).toFixed(1) + " kB" : n + " B";
        }
        function renderBlobs(s) {
          const b = s.blobs || { fetching: [], heldBytes: 0, cachedBytes: 0, cacheLimitBytes: 0, receivedBytes: 0, servedBytes: 0 };
          const summary = $("blobs-summary");
          summary.dataset.held = String(b.heldBytes || 0);
          summary.textContent = bytes(b.heldBytes || 0) + " held, " + bytes(b.cachedBytes || 0) + " of them fetched (cache limit " + bytes(b.cacheLimitBytes || 0) + ") · " + bytes(b.receivedBytes) + " received, " + bytes(b.servedBytes) + " served since start";
          const body = $("blobs").tBodies[0];
          body.replaceChildren();
          if (b.fetching.length === 0) body.append(el("tr", {}, el("td", { colspan: 4, class: "empty" }, "no fetch in progress")));
          const now = Date.now();
          for (const f of b.fetching) {
            const pct = f.size === 0 ? 100 : Math.floor(100 * f.heldBytes / f.size);
            const last = blobSeen[f.blob];
            const rate = last && now > last.t ? Math.max(0, (f.heldBytes - last.held) * 1000 / (now - last.t)) : null;
            blobSeen[f.blob] = { t: now, held: f.heldBytes };
            body.append(el("tr", { "data-blob": f.blob },
              el("td", {}, el("div", { class: "mono" }, short(f.blob)), el("div", { class: "mono mute" }, "group " + short(f.group))),
              el("td", {}, el("div", { class: "bar" + (pct >= 100 ? " done" : "") }, el("i", { style: "width:" + pct + "%" }))),
              el("td", { class: "held" }, bytes(f.heldBytes) + " / " + bytes(f.size) + " (" + pct + "%)"),
              el("td", { class: "mute" }, rate == null ? "…" : bytes(rate) + "/s")));
          }
        }

        // Commits per second: the sum of committed marks, differenced between documents.
        const series = [];
        let previous = null;
        function sample(s) {
          const total = s.groups.reduce((sum, g) => sum + g.committed, 0);
          const now = Date.now();
          if (previous && now > previous.t) series.push(Math.max(0, (total - previous.total) * 1000 / (now - previous.t)));
          previous = { t: now, total: total };
          while (series.length > 60) series.shift();
          drawChart();
        }
        function drawChart() {
          const svg = $("chart");
          const top = Math.max(1, ...series);
          const step = 600 / 59;
          const points = series.map((v, i) => ((60 - series.length + i) * step).toFixed(1) + "," + (150 - 140 * v / top).toFixed(1)).join(" ");
          const ns = "http://www.w3.org/2000/svg";
          const line = document.createElementNS(ns, "polyline");
          line.setAttribute("points", points);
          line.setAttribute("fill", "none");
          line.setAttribute("stroke", "#2f6fdb");
          line.setAttribute("stroke-width", "2");
          const base = document.createElementNS(ns, "line");
          for (const [k, v] of [["x1", 0], ["x2", 600], ["y1", 150], ["y2", 150], ["stroke", "#e1e5ea"]]) base.setAttribute(k, v);
          svg.replaceChildren(base, line);
          const last = series.length ? series[series.length - 1] : 0;
          $("chart-note").textContent = "now " + last.toFixed(1) + "/s · peak " + (series.length ? top.toFixed(1) : "0") + "/s over the last " + series.length + " s";
        }

        function render(s) {
          renderHeader(s); renderPeers(s); renderGroups(s); renderBlobs(s); renderClosed(s); sample(s);
          document.body.dataset.updates = String(Number(document.body.dataset.updates || 0) + 1);
        }

        fetch("/api/status" + query).then((r) => r.ok ? r.json() : Promise.reject(r.status)).then(render).catch(() => {});
        const events = new EventSource("/events" + query);
        events.addEventListener("status", (e) => { $("live").textContent = "live"; $("live").className = "on"; render(JSON.parse(e.data)); });
        events.onerror = () => { $("live").textContent = "reconnecting…"; $("live").className = ""; };
        </script>
        </body>
        </html>
        """#
}
