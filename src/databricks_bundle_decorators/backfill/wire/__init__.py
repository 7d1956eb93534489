"""The wire contract: every name and encoding that crosses launcher -> job -> ``dbxdec-run``.

:mod:`.params` (parameter names, defaults, key ranges, the run's logical time),
:mod:`.order` (the ``dbxdec_order`` parameter and its codec), :mod:`.orders` (undo,
presence and measurement orders and their reports), :mod:`.report` (report lines, and
where a failed run keeps them), :mod:`.trigger` (a table-triggered job's parameters),
:mod:`.controller` (the controller job's names). Codegen, launcher and runtime all import
these names, so they cannot drift apart. A generated task runs, for example::

    dbxdec-run --dbxdec_job=sales --dbxdec_task=clean --dbxdec_module=pkg.sales \\
        --dbxdec_run_id=550315892394120 ...
"""

from __future__ import annotations

from .order import (
    ORDER_KINDS,
    Order,
    StageOrder,
    SwapOrder,
    TaskOrder,
    decode_order,
    encode_order,
    keyless_run,
    order_in,
    task_order,
    with_order,
)
from .orders import (
    KeyChange,
    MeasureOrder,
    MeasureReport,
    PresenceOrder,
    PresenceReport,
    UndoOrder,
)
from .params import (
    BACKFILL_EXACT_PARAM,
    BACKFILL_KEY_PARAM,
    BACKFILL_PARAM_DEFAULTS,
    BACKFILL_PARAMS,
    BACKFILL_RUN_TIME_PARAM,
    BACKFILL_START_KEY_PARAM,
    ENTRY_POINT,
    FOR_EACH_INPUT_PARAM,
    FOR_EACH_INPUT_VALUE,
    JOB_PARAM,
    MODULE_PARAM,
    ORDER_PARAM,
    RUN_ID_PARAM,
    RUN_ID_VALUE,
    RUN_TIME_DEFAULT,
    TASK_PARAM,
    KeyRange,
    keys_label,
    parse_run_time,
    run_time_param,
)
from .report import (
    FAILED_REPORTS_DIR,
    REPORT_PREFIX,
    exit_value,
    exit_value_text,
    failed_reports_name,
    journal_folder_path,
    read_reports,
    report_line,
)

__all__ = [
    "BACKFILL_EXACT_PARAM",
    "BACKFILL_KEY_PARAM",
    "BACKFILL_PARAMS",
    "BACKFILL_PARAM_DEFAULTS",
    "BACKFILL_RUN_TIME_PARAM",
    "BACKFILL_START_KEY_PARAM",
    "ENTRY_POINT",
    "FAILED_REPORTS_DIR",
    "FOR_EACH_INPUT_PARAM",
    "FOR_EACH_INPUT_VALUE",
    "JOB_PARAM",
    "MODULE_PARAM",
    "ORDER_KINDS",
    "ORDER_PARAM",
    "REPORT_PREFIX",
    "RUN_ID_PARAM",
    "RUN_ID_VALUE",
    "RUN_TIME_DEFAULT",
    "TASK_PARAM",
    "KeyChange",
    "KeyRange",
    "MeasureOrder",
    "MeasureReport",
    "Order",
    "PresenceOrder",
    "PresenceReport",
    "StageOrder",
    "SwapOrder",
    "TaskOrder",
    "UndoOrder",
    "decode_order",
    "encode_order",
    "exit_value",
    "exit_value_text",
    "failed_reports_name",
    "journal_folder_path",
    "keyless_run",
    "keys_label",
    "order_in",
    "parse_run_time",
    "read_reports",
    "report_line",
    "run_time_param",
    "task_order",
    "with_order",
]
