"""The wire contract: every name and encoding that crosses launcher -> job -> ``dbxdec-run``.

Four modules, one responsibility each: :mod:`.params` (the parameters' names and
defaults), :mod:`.keys` (key ranges and the run's logical time), :mod:`.order` (the one
``dbxdec_order`` parameter that tells a run what to do), :mod:`.orders` (what
an undo or presence run is told, and the reports its tasks print) and :mod:`.measure`
(the same for the diff gate's measurement run); :mod:`.journal_path` (where a backfill's
state, and a failed task run's reports, live in the workspace). Every name is imported from here.

Bundle codegen (the producer), the launcher, the local runner and the runtime entry point
(the consumers) all import these names, so they cannot drift apart. It lives in the
lowest layer so that ``dbxdec-run`` needs nothing from bundle generation.

The ``python_wheel_task`` contract: what codegen writes and ``dbxdec-run`` reads.

Every generated task runs ``dbxdec-run`` with these named parameters (besides the job
parameters, pushed down by name)::

    dbxdec-run --dbxdec_job=sales --dbxdec_task=clean --dbxdec_module=pkg.sales \\
        --dbxdec_run_id=550315892394120 ...

"""

from __future__ import annotations

from .journal_path import (
    FAILED_REPORTS_DIR,
    JOURNAL_DIR,
    JOURNAL_DIR_ENV,
    failed_reports_name,
    journal_folder_path,
)
from .keys import (
    KeyRange,
    keys_label,
    parse_run_time,
    run_time_param,
)
from .measure import (
    ROWS_MEASURE,
    KeyChange,
    MeasureOrder,
    MeasureReport,
)
from .order import (
    ORDER_KINDS,
    Order,
    OrderKind,
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
    JOB_ID_PARAM,
    JOB_ID_VALUE,
    JOB_PARAM,
    MODULE_PARAM,
    NAIVE_RUN_TIME_ZONE,
    ORDER_PARAM,
    RUN_ID_PARAM,
    RUN_ID_VALUE,
    RUN_TIME_DEFAULT,
    TASK_PARAM,
    job_id_of,
)
from .report import (
    REPORT_KINDS,
    REPORT_PREFIX,
    ReportKind,
    exit_value,
    exit_value_text,
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
    "JOB_ID_PARAM",
    "JOB_ID_VALUE",
    "JOB_PARAM",
    "JOURNAL_DIR",
    "JOURNAL_DIR_ENV",
    "MODULE_PARAM",
    "NAIVE_RUN_TIME_ZONE",
    "ORDER_KINDS",
    "ORDER_PARAM",
    "REPORT_KINDS",
    "REPORT_PREFIX",
    "ROWS_MEASURE",
    "RUN_ID_PARAM",
    "RUN_ID_VALUE",
    "RUN_TIME_DEFAULT",
    "TASK_PARAM",
    "KeyChange",
    "KeyRange",
    "MeasureOrder",
    "MeasureReport",
    "Order",
    "OrderKind",
    "PresenceOrder",
    "PresenceReport",
    "ReportKind",
    "StageOrder",
    "SwapOrder",
    "TaskOrder",
    "UndoOrder",
    "decode_order",
    "encode_order",
    "exit_value",
    "exit_value_text",
    "failed_reports_name",
    "job_id_of",
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
