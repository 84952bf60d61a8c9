// Keeps server-rendered conversations live: one EventSource per <section data-stream>.
//
// Each "patch" message is {position, reset, nodes: [{key, seq, html | blocks}]}. A
// node with html whose key is on the page is patched in place (morph): only what
// changed inside it changes, so what the reader did stays (a tool card they opened
// stays open, focus stays, a selection in unchanged text survives). A new key is
// inserted in seq order (at the end, in practice). A node with blocks (a streaming
// text) keeps its element: in its Markdown container `at` ([data-blocks], in
// document order) the last `drop` blocks (each a <!--b--> comment and what follows
// it) give way to `html`, so a frame costs what changed, not the text's length.
// The script knows nothing about kinds: every node arrives as a server-rendered,
// escaped <article>, so adding a kind never changes this file.
// The browser resumes a dropped stream itself, sending the last message id as
// Last-Event-ID; the server answers with exactly what was missed.
//
// Screen readers: the conversation is not a live region (each delta would be read
// out again); a message is announced once, when it is complete (no part of it
// [data-status="streaming"]), through one polite live region per conversation.
//
// Branches: a node with sibling versions carries a switcher, <nav class="versions">
// with links to the neighbouring versions' leaves (?leaf=ID, data-leaf). Following
// one changes the shown path without a reload: the URL's ?leaf= is set (history
// keeps it, so a reload and the back button keep the leaf), the stream is reopened
// for that leaf from 0 and its first message replaces the view whole; the stream
// then follows that path live. Without the script the links load the page anew.
//
// Compaction: the nodes before the latest node of the kind the section names
// (data-fold: a compaction) are folded into one <details class="compacted"> at the
// top, as the static page folds them: closed until the reader opens it, and still
// patched in place (each node keeps its element). One arriving live folds what came
// before it in with them.
//
// A <ul data-stream> (the index) is replaced whole by each "index" message.
"use strict";

(() => {
  // A <template> parses without running anything: no script, no handler, no load.
  function parse(html) {
    const template = document.createElement("template");
    template.innerHTML = html;
    return template.content;
  }

  // Containers per element, found once: a query would walk the whole text each frame.
  const boxes = new WeakMap();

  function patchBlocks(element, blocks) {
    if (!boxes.has(element)) boxes.set(element, element.querySelectorAll("[data-blocks]"));
    const containers = boxes.get(element);
    for (const block of blocks) {
      const box = containers[block.at];
      let drop = block.drop;
      while (drop > 0 && box.lastChild) {
        const last = box.lastChild;
        if (last.nodeType === Node.COMMENT_NODE && last.data === "b") drop -= 1;
        last.remove();
      }
      box.append(parse(block.html));
    }
  }

  // Make `from` (on the page) equal to `to` (parsed), keeping every node of `from`
  // whose place and tag still fit. The reader's own state is theirs: an open or
  // closed <details> stays as they left it.
  function morph(from, to) {
    if (from.nodeType === Node.ELEMENT_NODE) {
      const mine = from.tagName === "DETAILS" ? "open" : null;
      for (const { name } of [...from.attributes]) {
        if (name !== mine && !to.hasAttribute(name)) from.removeAttribute(name);
      }
      for (const { name, value } of to.attributes) {
        if (name !== mine && from.getAttribute(name) !== value) from.setAttribute(name, value);
      }
    }
    let here = from.firstChild;
    let next = to.firstChild;
    while (next) {
      const after = next.nextSibling;
      if (here && here.nodeType === next.nodeType && here.nodeName === next.nodeName) {
        if (here.nodeType === Node.ELEMENT_NODE) morph(here, next);
        else if (here.data !== next.data) here.data = next.data;
        here = here.nextSibling;
      } else {
        from.insertBefore(next, here);
      }
      next = after;
    }
    while (here) {
      const gone = here;
      here = here.nextSibling;
      gone.remove();
    }
  }

  // Fold the nodes before the section's latest node of its data-fold kind into its
  // <details class="compacted"> (made when first needed, kept first in the section).
  function collapse(section) {
    const fold = section.dataset.fold;
    if (!fold) return;
    let box = section.firstElementChild;
    if (!box || !box.matches("details.compacted")) box = null;
    let cut = null;
    for (let at = section.lastElementChild; at && at !== box; at = at.previousElementSibling) {
      if (at.dataset.kind === fold) {
        cut = at;
        break;
      }
    }
    if (!cut) return;
    const before = [];  // ahead of the box (a long page's earlier nodes, put in later)
    const after = [];
    let past = !box;
    for (let at = section.firstElementChild; at !== cut; at = at.nextElementSibling) {
      if (at === box) past = true;
      else (past ? after : before).push(at);
    }
    if (!before.length && !after.length) return;
    if (!box) {
      box = document.createElement("details");
      box.className = "compacted";
      box.append(document.createElement("summary"));
      section.prepend(box);
    }
    box.firstElementChild.after(...before);
    box.append(...after);
    const rows = box.childElementCount - 1;
    box.firstElementChild.textContent =
      `${rows.toLocaleString("en")} ${rows === 1 ? "row" : "rows"} before the ${fold} below`;
  }

  function nearBottom() {
    const page = document.scrollingElement || document.documentElement;
    return page.scrollHeight - page.scrollTop - page.clientHeight < 48;
  }

  // A message to announce: the node shows a turn (.msg) and nothing in it streams.
  function complete(element) {
    return element.querySelector(".msg") !== null
      && element.querySelector('[data-status="streaming"]') === null;
  }

  function connect(section) {
    const byKey = new Map();
    const announced = new Set();
    for (const element of section.children) {
      if (element.dataset.key === undefined) continue;
      byKey.set(element.dataset.key, element);
      if (complete(element)) announced.add(element.dataset.key);  // read with the page
    }
    collapse(section);
    const region = document.createElement("div");
    region.className = "announce";
    region.setAttribute("aria-live", "polite");
    section.after(region);

    function announce(element) {
      const key = element.dataset.key;
      if (announced.has(key) || element.hidden || !complete(element)) return;
      announced.add(key);
      const turn = element.querySelector(".msg");
      const who = turn.querySelector(".who");
      const said = [...turn.childNodes].filter((part) => part !== who);
      const line = document.createElement("p");
      line.textContent = (who ? `${who.textContent}: ` : "")
        + said.map((part) => part.textContent).join("").trim();
      region.replaceChildren(line);
    }

    function insert(element, seq) {
      // New nodes almost always go last; walk back only past later seqs.
      let before = null;
      for (let other = section.lastElementChild; other; other = other.previousElementSibling) {
        if (Number(other.dataset.seq) > seq) before = other;
        else break;
      }
      section.insertBefore(element, before);
    }

    // A long conversation's page holds its latest nodes only (data-earlier: how many
    // came before). The stream is opened from 0, so its first message is the whole
    // view: the nodes the page lacks are put in ahead of the first one it has, a
    // chunk per task so the page answers meanwhile; later messages wait their turn.
    let filling = section.dataset.earlier !== undefined;
    // A long conversation opens at its latest node (away from the top, the browser
    // keeps the view where it is while the earlier nodes go in above).
    if (filling && !location.hash) window.scrollTo(0, document.documentElement.scrollHeight);
    const waiting = [];
    const CHUNK = 50;
    // Between chunks the page is idle for the reader first (a timer where the browser
    // has no idle callbacks).
    const later = window.requestIdleCallback || ((task) => setTimeout(task, 0));

    function fill(patch) {
      const first = section.firstElementChild;
      const known = [];
      const earlier = [];
      for (const node of patch.nodes) (byKey.has(node.key) ? known : earlier).push(node);
      apply({ ...patch, nodes: known });
      const target = decodeURIComponent(location.hash.slice(1));
      const view = generation;
      function step(at) {
        if (view !== generation) return;  // a switch replaced the view meanwhile
        const chunk = earlier.slice(at, at + CHUNK);
        const parsed = parse(chunk.map((node) => node.html).join(""));
        for (const element of [...parsed.children]) {
          byKey.set(element.dataset.key, element);
          if (complete(element)) announced.add(element.dataset.key);
        }
        section.insertBefore(parsed, first);
        if (at + CHUNK < earlier.length) {
          later(() => step(at + CHUNK));
          return;
        }
        filling = false;
        collapse(section);
        delete section.dataset.earlier;
        const note = section.previousElementSibling;
        if (note && note.classList.contains("earlier")) note.remove();
        // A link to a node the page did not have at first: there now.
        if (target && byKey.has(target)) byKey.get(target).scrollIntoView();
        for (const next of waiting.splice(0)) apply(next);
      }
      later(() => step(0));
    }

    let started = false;
    let generation = 0;  // which path's view the page shows (a switch counts it up)
    function receive(patch) {
      if (filling && !started) {
        started = true;
        if (patch.reset) {
          filling = false;  // the store was replaced: the whole view, as any reset
          apply(patch);
        } else {
          fill(patch);
        }
      } else if (filling) {
        waiting.push(patch);
      } else {
        apply(patch);
      }
    }

    // Set by a switch: the next message is the new path's whole view, read with
    // the switch (not announced); `focus` is the switcher link to focus again.
    let switching = null;

    function apply(patch) {
      const follow = nearBottom() && switching === null;
      const switched = switching;
      switching = null;
      if (patch.reset || switched) {
        section.replaceChildren();
        byKey.clear();
      }
      if (switched) for (const node of patch.nodes) announced.add(node.key);
      let folds = Boolean(patch.reset || switched);  // a node to fold the history before
      for (const node of patch.nodes) {
        const old = byKey.get(node.key);
        if (node.blocks) {
          // Sent only to a client that has the version patched (the server's rule).
          if (old && old.isConnected) patchBlocks(old, node.blocks);
          continue;
        }
        const element = parse(node.html).firstElementChild;
        if (!element) continue;
        if (element.dataset.kind === section.dataset.fold) folds = true;
        if (old && old.isConnected && old.tagName === element.tagName) {
          morph(old, element);
          boxes.delete(old);  // its containers may be new elements now
          announce(old);
        } else {
          if (old) old.remove();
          insert(element, node.seq);
          byKey.set(node.key, element);
          announce(element);
        }
      }
      if (folds && !filling) collapse(section);
      section.dataset.position = String(patch.position);
      section.dataset.nodes = String(byKey.size);
      if (switched) refocus(switched);
      if (follow) window.scrollTo(0, document.documentElement.scrollHeight);
    }

    // The switcher the reader used, on the new path: the same node's, same step.
    function refocus({ key, label }) {
      const article = byKey.get(key);
      if (!article) return;
      const nav = article.querySelector("nav.versions");
      if (!nav) return;
      const link = nav.querySelector(`a[aria-label="${label}"]`) || nav.querySelector("a");
      if (link) link.focus();
    }

    const url = new URL(section.dataset.stream, document.baseURI);
    let source = null;

    function listen(after) {
      if (source) source.close();
      url.searchParams.set("after", after);
      const mine = source = new EventSource(url);
      mine.addEventListener("open", () => {
        section.dataset.live = "open";
      });
      mine.addEventListener("error", () => {
        section.dataset.live = mine.readyState === EventSource.CLOSED ? "closed" : "reconnecting";
      });
      mine.addEventListener("patch", (event) => {
        if (mine === source) receive(JSON.parse(event.data));
      });
    }

    // Show the path to `leaf` (null: the active branch), from a whole first message.
    function show(leaf, from) {
      if (leaf === null) url.searchParams.delete("leaf");
      else url.searchParams.set("leaf", leaf);
      shown = leaf;
      filling = false;
      generation += 1;
      waiting.length = 0;
      switching = from || { key: "", label: "" };
      section.dataset.live = "switching";
      listen("0");
    }

    section.addEventListener("click", (event) => {
      const link = event.target.closest && event.target.closest("nav.versions a[data-leaf]");
      if (!link || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey) return;
      event.preventDefault();
      const leaf = link.dataset.leaf;
      const address = new URL(location.href);
      address.searchParams.set("leaf", leaf);
      address.searchParams.delete("all");
      address.hash = "";
      history.pushState({ leaf }, "", address);
      const article = link.closest("article");
      show(leaf, { key: article ? article.dataset.key : "", label: link.getAttribute("aria-label") });
    });
    // Back and forward: the leaf the URL names (a move between #fragments is no switch).
    let shown = new URL(location.href).searchParams.get("leaf");
    window.addEventListener("popstate", () => {
      const leaf = new URL(location.href).searchParams.get("leaf");
      if (leaf !== shown) show(leaf, null);
    });

    listen(filling ? "0" : section.dataset.position || "0");
  }

  function connectIndex(list) {
    const source = new EventSource(new URL(list.dataset.stream, document.baseURI));
    source.addEventListener("open", () => {
      list.dataset.live = "open";
    });
    source.addEventListener("index", (event) => {
      const fresh = parse(JSON.parse(event.data).html).firstElementChild;
      if (!fresh) return;
      fresh.dataset.live = list.dataset.live;
      morph(list, fresh);
    });
  }

  document.querySelectorAll("section[data-stream]").forEach(connect);
  document.querySelectorAll("ul[data-stream]").forEach(connectIndex);
})();
