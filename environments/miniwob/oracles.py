"""Scripted solvers for MiniWoB++ tasks: from the page as the agent sees it, the next command.

Each solver reads the utterance, the listed elements (text, kind, value, checked) and,
where the text view hides a needed fact (which tree node is a folder), the page's DOM;
it remembers nothing: what it has done comes from the env's ``history``. Solvers exist
for the common tasks (:data:`ORACLES`); on other tasks the env's oracle only scrolls.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from agentgym.browser.page import Element

if TYPE_CHECKING:
    from agentgym.environments.miniwob.env import MiniWoBEnv


class OracleView:
    """What a solver sees: the utterance, the elements, the history, and the page's DOM."""

    def __init__(self, env: MiniWoBEnv) -> None:
        self.env = env
        self.utterance = env.instruction
        self.elements = env.page()[1]
        self.history = env.history

    def quoted(self, index: int = 0) -> str:
        return re.findall(r'"([^"]*)"', self.utterance)[index]

    def find(self, text: str, *, tag: str | None = None, casefold: bool = False) -> Element | None:
        for element in self.elements:
            if (tag is None or element.tag == tag) and (
                element.text == text or casefold and element.text.casefold() == text.casefold()
            ):
                return element
        return None

    def by_kind(self, kind: str) -> list[Element]:
        return [element for element in self.elements if element.kind == kind]

    def after(self, element: Element) -> Element:
        """The element listed right after ``element`` (a label's input)."""
        return self.elements[self.elements.index(element) + 1]

    def done(self, command: str) -> bool:
        return command in self.history

    def classes(self, element: Element) -> str:
        return self.env.evaluate(f"document.querySelector('[data-bid=\"{element.bid}\"]').className")


def click(element: Element) -> str:
    return f"click({element.bid})"


def type_(element: Element, text: str) -> str:
    return f"type({element.bid}, {_quote(text)})"


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def submit(view: OracleView, label: str = "Submit") -> str:
    button = view.find(label, casefold=True) or view.by_kind("click")[-1]
    return click(button)


def fill_then_submit(view: OracleView, values: list[tuple[Element, str]], button: str = "Submit") -> str:
    """Type each value whose field differs, then click ``button``."""
    for field, value in values:
        if field.value != value:
            return type_(field, value)
    return submit(view, button)


# ---- clicking ---------------------------------------------------------------------------


def click_quoted(view: OracleView) -> str:
    target = view.find(view.quoted())
    if target is None and view.quoted() == "x":
        target = view.find("Close")
    assert target is not None, f"no element {view.quoted()!r}"
    return click(target)


def click_named_button(view: OracleView) -> str:
    name = re.search(r"button (\w+)", view.utterance).group(1)  # type: ignore[union-attr]
    return click(view.find(name))  # type: ignore[arg-type]


def click_only_button(view: OracleView) -> str:
    return click(view.find("Click Me!") or view.by_kind("click")[0])


def click_dialog_close(view: OracleView) -> str:
    return click(view.find("Close"))  # type: ignore[arg-type]


def click_button_sequence(view: OracleView) -> str:
    one = view.find("ONE")
    return click(view.find("TWO") if one is not None and view.done(click(one)) else one)  # type: ignore[arg-type]


def click_tab(view: OracleView) -> str:
    number = re.search(r"Tab #(\d+)", view.utterance).group(1)  # type: ignore[union-attr]
    return click(view.find(f"Tab #{number}"))  # type: ignore[arg-type]


def click_in_tabs(view: OracleView) -> str:
    """Open tabs one by one until the link is shown, then click it."""
    link = view.find(view.quoted(), tag="span")
    if link is not None:
        return click(link)
    tabs = [element for element in view.elements if element.tag == "a" and re.fullmatch(r"(Tab #)?\d+", element.text)]
    unseen = [tab for tab in tabs[1:] if not view.done(click(tab))]
    return click(unseen[0] if unseen else tabs[0])


def click_collapsible(view: OracleView) -> str:
    header = next(element for element in view.elements if element.tag == "h3")
    return click(header) if not view.done(click(header)) else submit(view)


def click_in_sections(view: OracleView) -> str:
    link = view.find(view.quoted(), tag="span")
    if link is not None:
        return click(link)
    headers = [element for element in view.elements if element.tag == "h3"]
    unseen = [header for header in headers if not view.done(click(header))]
    return click(unseen[0] if unseen else headers[0])


def click_widget(view: OracleView) -> str:
    kind = view.quoted()
    for element in view.elements:
        data_type = view.env.evaluate(
            f"document.querySelector('[data-bid=\"{element.bid}\"]').getAttribute('data-type')"
        )
        if data_type == kind:
            return click(element)
    raise AssertionError(f"no {kind} widget")


def click_link(view: OracleView) -> str:
    return click(view.find(view.quoted(), tag="span"))  # type: ignore[arg-type]


def select_labelled(view: OracleView, wanted: set[str]) -> str:
    """Make the checked boxes/radios exactly those whose label is in ``wanted``, then submit."""
    for label in view.elements:
        if label.tag != "label":
            continue
        box = view.after(label)
        if (label.text in wanted) != box.checked:
            return click(box)
    return submit(view)


def click_option(view: OracleView) -> str:
    return select_labelled(view, {re.search(r"Select (.*) and click", view.utterance).group(1)})  # type: ignore[union-attr]


def click_checkboxes(view: OracleView) -> str:
    listed = re.search(r"Select (.*) and click Submit", view.utterance).group(1)  # type: ignore[union-attr]
    wanted = set() if listed == "nothing" else {word.strip() for word in listed.split(",") if word.strip()}
    return select_labelled(view, wanted)


def navigate_tree(view: OracleView) -> str:
    target = view.find(view.quoted(), tag="span")
    if target is not None:
        return click(target)
    for element in view.elements:
        if element.tag == "span" and "folder" in view.classes(element) and not view.done(click(element)):
            return click(element)
    raise AssertionError("every folder is open and the target is missing")


# ---- typing -----------------------------------------------------------------------------


def enter_quoted(view: OracleView) -> str:
    return fill_then_submit(view, [(view.by_kind("input")[0], view.quoted())])


def enter_text_case(view: OracleView) -> str:
    text = view.quoted()
    text = text.lower() if "lower case" in view.utterance else text.upper()
    return fill_then_submit(view, [(view.by_kind("input")[0], text)])


def enter_password(view: OracleView) -> str:
    return fill_then_submit(view, [(field, view.quoted()) for field in view.by_kind("input")])


def login(view: OracleView) -> str:
    fields = view.by_kind("input")
    button = "Login" if view.find("Login") else "OK"
    return fill_then_submit(view, [(fields[0], view.quoted(0)), (fields[1], view.quoted(1))], button)


def login_popup(view: OracleView) -> str:
    popup = view.find("Cancel") or view.find("Close")
    if popup is not None and view.find("Login") is None:
        return click(popup)
    return login(view)


def focus_text(view: OracleView) -> str:
    ordinal = re.search(r"(\d+)(?:st|nd|rd|th)", view.utterance)
    return click(view.by_kind("input")[int(ordinal.group(1)) - 1 if ordinal else 0])


def choose_from_list(view: OracleView) -> str:
    names = re.search(r"Select (.*) from the", view.utterance).group(1).split(", ")  # type: ignore[union-attr]
    menu = view.by_kind("select")[0]
    command = f"select({menu.bid}, {_quote(names[0])})" if len(names) == 1 else f"select({menu.bid}, {names!r})"
    return submit(view) if view.done(command) else command


def use_autocomplete(view: OracleView) -> str:
    start, end = view.quoted(0), view.quoted(1) if view.utterance.count('"') >= 4 else ""
    field = view.by_kind("input")[0]
    if field.value.startswith(start) and field.value.endswith(end) and len(field.value) > len(start):
        return submit(view)
    for element in view.elements:
        if element.tag in ("li", "div") and element.text.startswith(start) and element.text.endswith(end):
            return click(element)
    return type_(field, start)


def search_engine(view: OracleView) -> str:
    name = view.quoted()
    position = int(re.search(r"click the (\d+)", view.utterance).group(1))  # type: ignore[union-attr]
    field = view.by_kind("input")[0]
    search = view.find("Search")
    if not view.done(click(search)):  # type: ignore[arg-type]
        return type_(field, name) if field.value != name else click(search)  # type: ignore[arg-type]
    page = (position - 1) // 3 + 1
    results = [element for element in view.elements if element.tag == "a" and element.text == name]
    active = view.env.evaluate("document.querySelector('.page-item.active a')?.textContent")
    if active != str(page):
        return click(view.find(str(page), tag="a"))  # type: ignore[arg-type]
    wanted = str(position - 1)
    for result in results:
        index = view.env.evaluate(f"document.querySelector('[data-bid=\"{result.bid}\"]').getAttribute('data-result')")
        if index == wanted:
            return click(result)
    raise AssertionError("the result is not on its page")


def simple_arithmetic(view: OracleView) -> str:
    problem = next(element.text for element in view.elements if element.text.endswith("="))
    left, operator, right = problem.rstrip("= ").split()
    value = {"+": int(left) + int(right), "-": int(left) - int(right), "x": int(left) * int(right)}[operator]
    return fill_then_submit(view, [(view.by_kind("input")[0], str(value))])


def simple_algebra(view: OracleView) -> str:
    problem = next(element.text for element in view.elements if "x" in element.text and "=" in element.text[-6:])
    equation, total = problem.split("=")
    solution = _solve_linear(equation.strip(), int(total))
    return fill_then_submit(view, [(view.by_kind("input")[0], str(solution))])


def _solve_linear(expression: str, total: int) -> int:
    """Solve ``expression = total`` for x, where expression is ``a + x``, ``x - a``, ``a - x``..."""
    for x in range(-1000, 1001):
        if eval(expression.replace("x", f"({x})"), {"__builtins__": {}}) == total:  # noqa: S307  (digits and +-)
            return x
    raise AssertionError(f"no integer solves {expression} = {total}")


def read_table(view: OracleView) -> str:
    key = re.search(r"value of (.*) into", view.utterance).group(1)  # type: ignore[union-attr]
    cells = [element for element in view.elements if element.tag in ("td", "th")]
    value = next(view.after(cell).text for cell in cells if cell.text == key)
    return fill_then_submit(view, [(view.by_kind("input")[0], value)])


def find_word(view: OracleView) -> str:
    index = int(re.search(r"(\d+)(?:st|nd|rd|th) word", view.utterance).group(1))  # type: ignore[union-attr]
    paragraph = next(element.text for element in view.elements if element.tag == "p")
    word = re.sub(r"[^a-zA-Z0-9]", "", paragraph.split()[index - 1])
    return fill_then_submit(view, [(view.by_kind("input")[0], word)])


def enter_date(view: OracleView) -> str:
    month, day, year = re.search(r"(\d+)/(\d+)/(\d+)", view.utterance).groups()  # type: ignore[union-attr]
    return fill_then_submit(view, [(view.by_kind("input")[0], f"{year}-{month}-{day}")])


def enter_time(view: OracleView) -> str:
    hour, minute, half = re.search(r"(\d+):(\d+) ?([AP]M)", view.utterance).groups()  # type: ignore[union-attr]
    hours = int(hour) % 12 + (12 if half == "PM" else 0)
    return fill_then_submit(view, [(view.by_kind("input")[0], f"{hours:02d}:{minute}")])


ORACLES: dict[str, Callable[[OracleView], str]] = {
    "click-test": click_only_button,
    "click-test-2": click_named_button,
    "click-test-transfer": click_named_button,
    "click-button": click_quoted,
    "click-button-sequence": click_button_sequence,
    "unicode-test": click_quoted,
    "click-link": click_link,
    "click-dialog": click_dialog_close,
    "click-dialog-2": click_quoted,
    "click-tab": click_tab,
    "click-tab-2": click_in_tabs,
    "click-tab-2-easy": click_in_tabs,
    "click-tab-2-medium": click_in_tabs,
    "click-tab-2-hard": click_in_tabs,
    "click-collapsible": click_collapsible,
    "click-collapsible-nodelay": click_collapsible,
    "click-collapsible-2": click_in_sections,
    "click-collapsible-2-nodelay": click_in_sections,
    "click-widget": click_widget,
    "click-option": click_option,
    "click-checkboxes": click_checkboxes,
    "click-checkboxes-large": click_checkboxes,
    "click-checkboxes-transfer": click_checkboxes,
    "navigate-tree": navigate_tree,
    "enter-text": enter_quoted,
    "enter-text-dynamic": enter_quoted,
    "enter-text-2": enter_text_case,
    "enter-password": enter_password,
    "login-user": login,
    "login-user-popup": login_popup,
    "focus-text": focus_text,
    "focus-text-2": focus_text,
    "choose-list": choose_from_list,
    "click-scroll-list": choose_from_list,
    "use-autocomplete": use_autocomplete,
    "use-autocomplete-nodelay": use_autocomplete,
    "search-engine": search_engine,
    "simple-arithmetic": simple_arithmetic,
    "simple-algebra": simple_algebra,
    "read-table": read_table,
    "find-word": find_word,
    "enter-date": enter_date,
    "enter-time": enter_time,
}
