"""Import BrowserGym / AgentLab experiment directories as raw episodes.

WebMRE (arXiv 2609.27353) is built from successful WebArena trajectories. Those runs are
usually BrowserGym/AgentLab experiment directories; this importer turns the successful
ones into raw episodes (:mod:`mag_dataset.raw`) that the builder reads.

Input layout (written by ``browsergym.experiments.loop``, BrowserGym 0.12 to 0.14; one
directory per episode, given by a relative or an absolute path)::

    <date>_<agent>_on_<task_name>_<seed>/
        exp_args.pkl                  # pickled ExpArgs (env_args.task_name, task_seed, ...)
        summary_info.json             # n_steps, cum_reward, err_msg, terminated, truncated, ...
        step_0.pkl.gz, step_1.pkl.gz  # gzip-pickled StepInfo: obs, action, reward, ...
        screenshot_step_0.png         # obs["screenshot"], saved apart from the pickle
        screenshot_som_step_0.png     # optional (save_som=True)
        goal_object.pkl.gz            # optional: obs["goal_object"] saved once

``StepInfo.action`` of step *i* is the action chosen on the observation of step *i*; the
last step has no action.

Hostile runs
    Every experiment folder is converted in a child process with a memory and a time limit
    (:mod:`mag_dataset.isolation`, :data:`IMPORT_LIMITS`), so even an unknown bomb costs one
    skipped folder, never the batch. Pickles are read with a restricted unpickler that
    resolves exact ``(module, name)`` pairs only (:data:`~.unpickle._ALLOWED`: numpy's array
    reconstruction, a few containers, AgentLab's chat messages and discussions); other names
    of numpy, builtins, the standard library's object machinery and AgentLab's message module
    are refused, AgentLab's chat messages (``dict`` subclasses) load as plain
    :class:`~.unpickle.ChatMessage` dicts, and any other class (BrowserGym's, AgentLab's agent arguments)
    loads as an inert :class:`~.unpickle.Record`, which is never given items. Numpy dtypes must be
    plain and their pickled state must match what a plain dtype pickles; arrays are rebuilt
    here from their raw bytes after their size is checked (at most :data:`~.limits.MAX_ARRAY_BYTES`);
    no builtin allocates from a size the pickle chooses. Observations are type-checked before use, the DOM
    snapshot walked iteratively with cycle detection (:func:`~.limits.check_dom`); images pass a
    pixel cap (:data:`~.limits.MAX_PIXELS`) before decoding; gzip files are decompressed in bounded
    chunks; a file that is a symlink leading outside the experiment folder is refused; a
    non-finite ``cum_reward`` is a failure.

What is imported
    An episode is imported when ``summary_info.json`` reports no error and
    ``cum_reward >= min_reward`` (default 1.0: strict success). BrowserGym's MiniWoB++ reward
    is 1 for any positive raw reward (partial credit), so a MiniWoB++ episode must also have
    MiniWoB's own raw reward (``task_info["RAW_REWARD_GLOBAL"]`` of its last step that stores
    one) ``>= min_reward``. A run that kept no screenshot at all (saved with BrowserGym's
    ``save_screenshot`` off, as AgentLab's own test runs are) is skipped once, as "no
    screenshots saved". Each step with an action becomes a raw step: the screenshot (cropped
    to MiniWoB's task area, whole otherwise), the candidate menu and Set-of-Mark screenshot —
    with :func:`mag_dataset.live.observe.observe` when the observation holds the DOM snapshot,
    else from the accessibility tree and BrowserGym's element properties (elements BrowserGym
    marks for set-of-marks) — the action mapped onto the benchmark action space, and a
    template guide (:func:`mag_dataset.template_guides.template_guide`). ``noop()`` steps are dropped.
    An episode with an action that has no benchmark equivalent (several actions in one step,
    ``keyboard_type`` without a focused element, drag and drop, file upload...) is skipped as
    a whole, with the reason reported, because dropping a step would break the trajectory.
    ``mouse_click(x, y)`` becomes a coordinate-only click with a point-sized target box; run
    ``mag unify`` afterwards to restore its element.

Sites and templates
    MiniWoB++: the site and template are the task name (``click-button``). WebArena: the
    site comes from the port of the first URL (WebArena's standard ports, :data:`~.convert.WEBARENA_PORTS`),
    the template is the task name unless ``templates`` maps task names to template ids.

Modules
    :mod:`.limits` (hostile-input caps and observation checks), :mod:`.unpickle` (the
    restricted unpickler), :mod:`.folders` (reading one experiment folder),
    :mod:`.observation` (one observation's screenshot, Set-of-Mark image and menu),
    :mod:`.actions` (BrowserGym actions onto the benchmark action space), :mod:`.convert` (one
    folder into one raw episode, in a child process) and :mod:`.batch` (many folders into a
    corpus: repeats, limits, writing). What it shares with the other importers is
    :mod:`mag_dataset.harness.import_common`'s. The package exports what ``mag
    import-browsergym`` and a caller of the importer need (:data:`__all__`); everything else is
    imported from the module that defines it.
"""

from __future__ import annotations

from mag_dataset.harness.browsergym_import.batch import ImportReport, import_experiments
from mag_dataset.harness.browsergym_import.limits import IMPORT_LIMITS, ImportErrorForEpisode

__all__ = ["IMPORT_LIMITS", "ImportErrorForEpisode", "ImportReport", "import_experiments"]
