"""Write BrowserGym experiment folders with ``browsergym-experiments``' own ``ExpArgs.run()``.

Run as a child process (``python tests/_bgym_runs.py SPEC.json``) so that BrowserGym's
process-wide Playwright and the loop's root-logger changes stay out of the test process.
SPEC is a JSON object ``{"root": folder, "runs": [...]}``; each run is ``{"task": ...,
"seed": n, "agent": name, "preprocessor": "default"|"objects"|"demo", "exp_name", "root",
"options", "offline"}`` (optional after ``agent``; ``offline`` runs it and the later runs as
on a machine without network, where tiktoken cannot download its encoding). Scripted agents find elements by role and name in ``axtree_txt``
(every preprocessor keeps it), as an LLM agent reading the AX tree would.

Tasks: MiniWoB++ tasks by name, and ``mag.pizza`` / ``mag.pizza-infeasible``: a local order
form whose ``<label for=...>`` labels sit in other table cells than their fields (as on
Magento's and WorkArena's forms); the task checks the form state (and, for the infeasible
variant, that the agent reported the impossible request), so success is read from the page.
"""

from __future__ import annotations

import ast
import json
import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

PIZZA_HTML = """<!doctype html><html><head><title>Pizza order</title>
<style>body{font:16px sans-serif;margin:20px} td{padding:6px} select{min-width:120px}</style></head>
<body><h1>Pizza order</h1>
<table>
<tr><td><label for="who">Your name</label></td><td><input id="who" type="text"></td></tr>
<tr><td><label for="news">Subscribe to news</label></td><td><input id="news" type="checkbox"></td></tr>
<tr><td><label for="size">Size</label></td><td><select id="size"><option>Small</option><option>Medium</option>
<option>Large</option></select></td></tr>
<tr><td><label for="tops">Toppings</label></td><td><select id="tops" multiple size="3"><option>Ham</option>
<option>Olives</option><option>Mushrooms</option></select></td></tr>
</table>
<button id="order" type="button" onclick="window.ordered = true; this.textContent = 'Ordered'">Order</button>
</body></html>"""

PIZZA_STATE_JS = """() => ({who: document.getElementById('who').value, news: document.getElementById('news').checked,
size: document.getElementById('size').value,
tops: Array.from(document.getElementById('tops').selectedOptions).map(o => o.value), ordered: !!window.ordered})"""

PIZZA_GOAL = "Order a Large pizza with Ham and Olives for Ann, and subscribe to the news."
PIZZA_INFEASIBLE_GOAL = ("Fill in the order for Ann (Large, Ham and Olives, subscribed to the news), "
                         "then choose a purple crust; report it if that is impossible.")
WANT = {"who": "Ann", "news": True, "size": "Large", "tops": ["Ham", "Olives"]}


def register_pizza_tasks(folder: Path) -> None:
    """Register the pizza tasks; their page is written into ``folder`` (the run's root)."""
    from browsergym.core.registration import register_task
    from browsergym.core.task import AbstractBrowserTask

    page_file = Path(tempfile.mkdtemp(prefix="mag_pizza_", dir=folder)) / "order.html"
    page_file.write_text(PIZZA_HTML, "utf-8")

    class PizzaTask(AbstractBrowserTask):
        def __init__(self, seed: int, infeasible: bool = False) -> None:
            super().__init__(seed)
            self.infeasible = infeasible
            self.viewport = {"width": 800, "height": 600}

        @classmethod
        def get_task_id(cls):
            return "mag.pizza"

        def setup(self, page):
            page.goto(page_file.as_uri())
            return (PIZZA_INFEASIBLE_GOAL if self.infeasible else PIZZA_GOAL), {}

        def teardown(self):
            pass

        def validate(self, page, chat_messages):
            state = page.evaluate(PIZZA_STATE_JS)
            filled = all(state[k] == v for k, v in WANT.items())
            if self.infeasible:
                reported = any(m["role"] == "infeasible" for m in chat_messages)
                return float(filled and reported), reported, "", {"state": state}
            return float(filled and state["ordered"]), bool(state["ordered"]), "", {"state": state}

    register_task("mag.pizza", PizzaTask, task_kwargs={"infeasible": False})
    register_task("mag.pizza-infeasible", PizzaTask, task_kwargs={"infeasible": True})


_LINE = re.compile(r"^\s*\[(?P<bid>[^\]]+)\] (?P<role>\S+) (?P<name>'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")")


def find(obs: dict, role: str, name: str) -> str:
    """The bid of the first ``axtree_txt`` line with this role and name."""
    for line in obs["axtree_txt"].splitlines():
        m = _LINE.match(line)
        if m and m["role"] == role and ast.literal_eval(m["name"]).strip() == name:
            return m["bid"]
    raise LookupError(f"no {role} {name!r} in the AX tree:\n{obs['axtree_txt'][:3000]}")


# -- scripted plans: obs, step -> action string (None ends the episode) -----------------


def plan_click_checkboxes(obs: dict, step: int, state: dict) -> str | None:
    # "Select X, Y and click Submit." (MiniWoB++ click-checkboxes)
    if "todo" not in state:
        m = re.search(r"Select (.*) and click Submit", obs["goal"])
        words = [w.strip() for w in re.split(r",| and ", m.group(1)) if w.strip()] if m and "nothing" not in m.group(1) else []
        state["todo"] = [("check", find(obs, "checkbox", w)) for w in words] + [("click", find(obs, "button", "Submit"))]
        if state.get("noop_first"):
            state["todo"].insert(0, ("noop", None))
        if state.get("recheck") and len(state["todo"]) > 1:  # check the first box again: a no-op
            state["todo"].insert(2 if state.get("noop_first") else 1, state["todo"][1 if state.get("noop_first") else 0])
    if not state["todo"]:
        return None
    fn, bid = state["todo"].pop(0)
    return "noop(10)" if fn == "noop" else f"{fn}({bid!r})"


def plan_click_button(obs: dict, step: int, state: dict) -> str | None:
    goal = " ".join(p["text"] for p in obs["goal_object"] if p.get("type") == "text")  # the demo agent drops "goal"
    m = re.search(r'Click on the "(.*)" button', goal)
    if step > 0 or m is None:
        return None
    return f"click({find(obs, 'button', m.group(1))!r})"


def plan_pizza_infeasible(obs: dict, step: int, state: dict) -> str | None:
    plan = [
        lambda: f"focus({find(obs, 'textbox', 'Your name')!r})",
        lambda: "keyboard_insert_text('Ann')",
        lambda: f"check({find(obs, 'checkbox', 'Subscribe to news')!r})",
        lambda: f"select_option({find(obs, 'combobox', 'Size')!r}, 'Large')",
        lambda: f"select_option({find(obs, 'listbox', 'Toppings')!r}, ['Ham', 'Olives'])",
        lambda: "report_infeasible(reason='There is no purple crust: the form has no crust option.')",
    ]
    return plan[step]() if step < len(plan) else None


def plan_pizza_tools(obs: dict, step: int, state: dict) -> str | None:
    """A tool-call agent: each action is a ToolCallAction's ``model_dump_json()``."""
    calls = [
        lambda: ("fill", {"bid": find(obs, "textbox", "Your name"), "value": "Ann"}),
        lambda: ("click", {"bid": find(obs, "checkbox", "Subscribe to news")}),
        lambda: ("select_option", {"bid": find(obs, "combobox", "Size"), "options": "Large"}),
        lambda: ("select_option", {"bid": find(obs, "listbox", "Toppings"), "options": ["Ham", "Olives"]}),
        lambda: ("click", {"bid": find(obs, "button", "Order")}),
    ]
    if step >= len(calls):
        return None
    name, arguments = calls[step]()
    from pydantic import BaseModel

    class FunctionCall(BaseModel):
        name: str
        arguments: dict

    class ToolCallAction(BaseModel):
        id: str = ""
        function: FunctionCall

    return ToolCallAction(id=f"call_{step}", function=FunctionCall(name=name, arguments=arguments)).model_dump_json(indent=2)


PLANS = {"click-checkboxes": plan_click_checkboxes, "click-button": plan_click_button,
         "pizza-infeasible": plan_pizza_infeasible, "pizza-tools": plan_pizza_tools}


def demo_preprocessor(obs: dict) -> dict:
    """BrowserGym's demo agent's ``obs_preprocessor`` (demo_agent/agent.py, 0.14)."""
    from browsergym.utils.obs import flatten_axtree_to_str, flatten_dom_to_str, prune_html

    return {
        "chat_messages": obs["chat_messages"], "screenshot": obs["screenshot"], "goal_object": obs["goal_object"],
        "last_action": obs["last_action"], "last_action_error": obs["last_action_error"],
        "open_pages_urls": obs["open_pages_urls"], "open_pages_titles": obs["open_pages_titles"],
        "active_page_index": obs["active_page_index"], "axtree_txt": flatten_axtree_to_str(obs["axtree_object"]),
        "pruned_html": prune_html(flatten_dom_to_str(obs["dom_object"])),
    }


def objects_preprocessor(obs: dict) -> dict:
    """An AgentLab GenericAgent-style preprocessor: text views added, the DOM and AX objects kept."""
    from browsergym.utils.obs import flatten_axtree_to_str, flatten_dom_to_str, prune_html

    obs = dict(obs)
    obs["dom_txt"] = flatten_dom_to_str(obs["dom_object"])
    obs["axtree_txt"] = flatten_axtree_to_str(obs["axtree_object"])
    obs["pruned_html"] = prune_html(obs["dom_txt"])
    return obs


def _bid_actions():
    from browsergym.core.action import functions
    from browsergym.core.action.highlevel import HighLevelActionSet

    # check/uncheck exist in BrowserGym's action functions but in no subset of 0.14: add them
    return HighLevelActionSet(subsets=["chat", "infeas", "bid", "coord", "nav", "tab", "custom"],
                              custom_actions=[functions.check, functions.uncheck], strict=False, multiaction=False)


class ToolActions:
    """A tool-call agent's action set: the JSON tool call becomes BrowserGym's call."""

    def to_python_code(self, action: str) -> str:
        call = json.loads(action)["function"]
        args = ", ".join(f"{k}={v!r}" for k, v in call["arguments"].items())
        return _bid_actions().to_python_code(f"{call['name']}({args})")


def make_agent_args(plan: str, preprocessor: str, options: dict):
    from browsergym.experiments.agent import Agent, AgentInfo
    from browsergym.experiments.loop import AbstractAgentArgs

    global ScriptedAgent, ScriptedAgentArgs

    class ScriptedAgent(Agent):
        def __init__(self, args):
            self.args = args
            self.state = dict(args.options)
            self.step = 0
            self.action_set = ToolActions() if args.plan == "pizza-tools" else _bid_actions()

        def obs_preprocessor(self, obs):
            if self.args.preprocessor == "demo":
                return demo_preprocessor(obs)
            if self.args.preprocessor == "objects":
                return objects_preprocessor(obs)
            return super().obs_preprocessor(obs)  # BrowserGym's default: drops dom_object, axtree_object

        def get_action(self, obs):
            action = PLANS[self.args.plan](obs, self.step, self.state)
            self.step += 1
            return action, AgentInfo(think=f"step {self.step}")

    @dataclass
    class ScriptedAgentArgs(AbstractAgentArgs):
        plan: str = ""
        preprocessor: str = "default"
        options: dict = None

        def make_agent(self):
            return ScriptedAgent(self)

    ScriptedAgent.__qualname__ = "ScriptedAgent"
    ScriptedAgentArgs.__qualname__ = "ScriptedAgentArgs"
    return ScriptedAgentArgs(agent_name=f"Scripted-{plan}", plan=plan, preprocessor=preprocessor, options=options or {})


def offline_tiktoken() -> None:
    """BrowserGym's loop counts tokens with tiktoken, which downloads its encoding: offline,
    give ``cl100k_base`` a byte-level vocabulary made here (the counts only feed stats)."""
    import tiktoken
    import tiktoken.registry

    tiktoken.registry.ENCODINGS["cl100k_base"] = tiktoken.Encoding(
        name="cl100k_base", pat_str=r"\S+|\s+", mergeable_ranks={bytes([i]): i for i in range(256)}, special_tokens={})


def _timed_out(exp_dir: Path) -> bool:
    """Whether a finished run failed and one of its actions hit BrowserGym's 500 ms action timeout."""
    summary = exp_dir / "summary_info.json"
    if not summary.is_file() or json.loads(summary.read_text()).get("cum_reward") == 1.0:
        return False
    import gzip
    import pickle

    for step in sorted(exp_dir.glob("step_*.pkl.gz")):  # written by this process's own loop: trusted
        with gzip.open(step) as f:
            obs = getattr(pickle.load(f), "obs", None) or {}
        if "Timeout 500ms exceeded" in str(obs.get("last_action_error") or ""):
            return True
    return False


def main(spec_path: str) -> None:
    import os

    spec = json.loads(Path(spec_path).read_text("utf-8"))
    from mag_dataset.live.env import _patch_browsergym, miniwob_url

    os.environ.setdefault("MINIWOB_URL", miniwob_url())
    _patch_browsergym()  # the system Chromium
    register_pizza_tasks(Path(spec_path).parent)  # beside the spec, outside the study
    offline_tiktoken()
    from browsergym.experiments.loop import EnvArgs, ExpArgs

    for run in spec["runs"]:
        if run.get("offline"):  # tiktoken as on an offline machine: no cached encoding, no network
            import tiktoken.registry

            tiktoken.registry.ENCODINGS.pop("cl100k_base", None)
            os.environ["TIKTOKEN_CACHE_DIR"] = tempfile.mkdtemp(prefix="mag_tiktoken_", dir=Path(spec_path).parent)
            os.environ["HTTPS_PROXY"] = os.environ["HTTP_PROXY"] = "http://127.0.0.1:9"
        for attempt in (1, 2):
            args = ExpArgs(agent_args=make_agent_args(run["agent"], run.get("preprocessor", "default"),
                                                      run.get("options", {})),
                           env_args=EnvArgs(task_name=run["task"], task_seed=run["seed"], max_steps=12, headless=True),
                           exp_name=run.get("exp_name"))
            args.prepare(run.get("root", spec["root"]))
            args.run()
            if attempt == 1 and _timed_out(Path(args.exp_dir)):
                # BrowserGym's actions wait 500 ms at most (hard-coded in their source): on a machine busy
                # with the rest of the suite a check() can miss it and the scripted run fails. Run it
                # again once, in a new folder; the importer tests read only the folders kept.
                import shutil

                shutil.rmtree(args.exp_dir)
                continue
            break
        summary = Path(args.exp_dir) / "summary_info.json"  # absent when the loop crashed saving it
        print(json.dumps({"exp_dir": str(args.exp_dir), "summary": json.loads(summary.read_text()) if summary.is_file() else None}),
              flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
