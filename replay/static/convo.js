// Keeps server-rendered conversations live: one EventSource per <section data-stream>.
//
// Each "patch" message is {position, reset, nodes: [{key, seq, html | blocks}]}. A
// node with html whose key is on the page is replaced in place; a new key is inserted
// in seq order (at the end, in practice). A node with blocks (a streaming text) keeps
// its element: in its Markdown container `at` ([data-blocks], in document order) the
// last `drop` blocks (each a <!--b--> comment and what follows it) give way to
// `html`, so a frame costs what changed, not the text's length. The script knows nothing about kinds: every node arrives
// as a server-rendered, escaped <article>, so adding a kind never changes this file.
// The browser resumes a dropped stream itself, sending the last message id as
// Last-Event-ID; the server answers with exactly what was missed.
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

  function nearBottom() {
    const page = document.scrollingElement || document.documentElement;
    return page.scrollHeight - page.scrollTop - page.clientHeight < 48;
  }

  function connect(section) {
    const byKey = new Map();
    for (const element of section.children) {
      if (element.dataset.key !== undefined) byKey.set(element.dataset.key, element);
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

    function apply(patch) {
      const follow = nearBottom();
      if (patch.reset) {
        section.replaceChildren();
        byKey.clear();
      }
      for (const node of patch.nodes) {
        const old = byKey.get(node.key);
        if (node.blocks) {
          // Sent only to a client that has the version patched (the server's rule).
          if (old && old.isConnected) patchBlocks(old, node.blocks);
          continue;
        }
        const element = parse(node.html).firstElementChild;
        if (!element) continue;
        if (old && old.isConnected) old.replaceWith(element);
        else insert(element, node.seq);
        byKey.set(node.key, element);
      }
      section.dataset.position = String(patch.position);
      if (follow) window.scrollTo(0, document.documentElement.scrollHeight);
    }

    const url = new URL(section.dataset.stream, document.baseURI);
    url.searchParams.set("after", section.dataset.position || "0");
    const source = new EventSource(url);
    source.addEventListener("open", () => {
      section.dataset.live = "open";
    });
    source.addEventListener("error", () => {
      section.dataset.live = source.readyState === EventSource.CLOSED ? "closed" : "reconnecting";
    });
    source.addEventListener("patch", (event) => apply(JSON.parse(event.data)));
  }

  document.querySelectorAll("section[data-stream]").forEach(connect);
})();
