// Makes a page render the same on any day, before it is read for grounding tasks (environments/grounding/capture.py).
// Argument: {rules: [{selector, attribute, pattern}]}, a source's `freeze` rules. Each element a rule's CSS selector
// matches may show text that depends on when the page is seen (a relative date, "11 months ago"). With a `pattern`,
// an element whose `attribute` (URL-decoded) matches it shows the match's first group instead (the absolute date
// the page itself carries there); one that does not match is left alone. Without a pattern, the element is hidden
// (its box kept, so that nothing else moves). Each element rewritten or hidden is marked `data-agentgym-frozen`:
// the capture leaves it out of the targets. Returns how many.
({rules}) => {
  let frozen = 0;
  for (const {selector, attribute, pattern} of rules) {
    for (const element of document.querySelectorAll(selector)) {
      if (pattern) {
        let value = element.getAttribute(attribute) || '';
        try { value = decodeURIComponent(value); } catch (error) { /* not URL-encoded: kept as it is */ }
        const match = value.match(new RegExp(pattern));
        if (!match || !match[1]) continue;
        element.textContent = match[1];
      } else {
        element.style.visibility = 'hidden';
      }
      element.setAttribute('data-agentgym-frozen', '');
      frozen += 1;
    }
  }
  return frozen;
}
