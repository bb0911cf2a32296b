"""Hand-built gold steps for the scorer, parser, prompt, heuristic and exploit tests.

One step per kind of gold action the scorer treats differently: targeted with text
(type), targeted with a value (select), plain targeted (click), untargeted with an
argument (scroll, press, goto), untargeted without one (go_back), finish with an answer,
and audit states (disputed, unmappable, remapped), stale and unseen-template flags.
"""

from __future__ import annotations

from mag_dataset.schema import Action, Candidate, Step

MENU = (
    Candidate("3", "textbox", "Username", (10.0, 40.0, 150.0, 60.0)),
    Candidate("4", "textbox", "Password", (10.0, 70.0, 150.0, 90.0)),
    Candidate("5", "combobox", "Country", (10.0, 100.0, 150.0, 120.0)),
    Candidate("7", "button", "Submit", (20.0, 130.0, 80.0, 150.0)),
    Candidate("8", "link", "Forgot password?", (90.0, 130.0, 150.0, 150.0)),
)


def make_step(
    step_id: str,
    task_id: str,
    action: Action,
    *,
    guide: str,
    target_bbox=None,
    step_index: int = 0,
    num_steps: int = 3,
    site: str = "miniwob",
    audit_status: str = "unaudited",
    stale: bool = False,
    unseen_template: bool = False,
    previous_guides: tuple[str, ...] = (),
    candidates=MENU,
    intent: str = 'Log in as "Cheree" with password "x1y2" from France',
    template: str = "login-user",
) -> Step:
    return Step(
        step_id=step_id,
        task_id=task_id,
        site=site,
        intent=intent,
        intent_template_id=template,
        step_index=step_index,
        num_steps=num_steps,
        image_width=160,
        image_height=210,
        previous_guides=previous_guides,
        guide=guide,
        guide_source="template",
        action=action,
        target_bbox=target_bbox,
        audit_status=audit_status,
        disputed=audit_status == "disputed",
        stale=stale,
        unseen_template=unseen_template,
        split="test",
        candidates=candidates,
    )


def gold_steps() -> list[Step]:
    """Twelve steps over four tasks and two sites, covering every scoring path."""
    m = {c.id: c for c in MENU}
    return [
        make_step("login-1/0", "login-1", Action("type", element_id="3", coordinate=(80.0, 50.0), text="Cheree"),
                  guide="Type 'Cheree' into the Username field.", target_bbox=m["3"].bbox),
        make_step("login-1/1", "login-1", Action("type", element_id="4", coordinate=(80.5, 80.25), text="x1y2"),
                  guide="Type 'x1y2' into the Password field.", target_bbox=m["4"].bbox, step_index=1,
                  previous_guides=("Type 'Cheree' into the Username field.",), stale=True),
        make_step("login-1/2", "login-1", Action("select", element_id="5", coordinate=(80.0, 110.0), value="France"),
                  guide="Choose 'France' in the Country drop-down.", target_bbox=m["5"].bbox, step_index=2,
                  previous_guides=("Type 'Cheree' into the Username field.", "Type 'x1y2' into the Password field.")),
        make_step("login-2/0", "login-2", Action("click", element_id="7", coordinate=(50.0, 140.0)),
                  guide="Click the 'Submit' button.", target_bbox=m["7"].bbox, num_steps=4),
        make_step("login-2/1", "login-2", Action("scroll", direction="down"),
                  guide="Scroll down to see the rest of the form.", step_index=1, num_steps=4),
        make_step("login-2/2", "login-2", Action("press", key="Enter"),
                  guide="Press Enter to submit the form.", step_index=2, num_steps=4, audit_status="confirmed"),
        make_step("login-2/3", "login-2", Action("finish", answer="done"),
                  guide="The task is complete.", step_index=3, num_steps=4),
        make_step("wiki-1/0", "wiki-1", Action("goto", url="https://en.wikipedia.org/wiki/Lyon"),
                  guide="Open the Wikipedia article on Lyon.", site="wikipedia", template="wiki-open",
                  unseen_template=True, candidates=()),
        make_step("wiki-1/1", "wiki-1", Action("go_back"), guide="Go back to the previous page.",
                  site="wikipedia", template="wiki-open", unseen_template=True, step_index=1, candidates=()),
        make_step("audit-1/0", "audit-1", Action("click", element_id="8", coordinate=(120.0, 140.0)),
                  guide="Click the 'Forgot password?' link.", target_bbox=m["8"].bbox, audit_status="disputed"),
        make_step("audit-1/1", "audit-1", Action("click", element_id="7", coordinate=(50.0, 140.0)),
                  guide="Click the 'Submit' button.", target_bbox=m["7"].bbox, step_index=1,
                  audit_status="unmappable"),
        make_step("audit-1/2", "audit-1", Action("type", element_id="3", coordinate=(80.0, 50.0), text="Hello, World!"),
                  guide="Type 'Hello, World!' into the Username field.", target_bbox=m["3"].bbox, step_index=2,
                  audit_status="confirmed"),
    ]
