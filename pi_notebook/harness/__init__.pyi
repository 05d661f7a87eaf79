"""Type stub of the package's public names; lazy-loader reads it to import each name's
submodule on first use."""

from .branch_summary import (
    BranchSummaryError as BranchSummaryError,
    BranchSummaryResult as BranchSummaryResult,
    collect_entries_for_branch_summary as collect_entries_for_branch_summary,
    generate_branch_summary as generate_branch_summary,
)
from .budget import BudgetCaps as BudgetCaps, BudgetSettings as BudgetSettings
from .compaction import (
    CompactionError as CompactionError,
    CompactionPreparation as CompactionPreparation,
    CompactionResult as CompactionResult,
    CompactionSettings as CompactionSettings,
    compact as compact,
    prepare_compaction as prepare_compaction,
)
from .context_messages import ContextMessages as ContextMessages
from .entries import (
    ActiveToolsChangeEntry as ActiveToolsChangeEntry,
    BranchSummaryEntry as BranchSummaryEntry,
    CompactionEntry as CompactionEntry,
    ContextEditEntry as ContextEditEntry,
    ContextEditReplacement as ContextEditReplacement,
    CustomEntry as CustomEntry,
    CustomMessageEntry as CustomMessageEntry,
    KnownEntry as KnownEntry,
    LabelEntry as LabelEntry,
    LeafEntry as LeafEntry,
    MessageEntry as MessageEntry,
    ModelChangeEntry as ModelChangeEntry,
    SessionEntry as SessionEntry,
    SessionHeader as SessionHeader,
    SessionInfoEntry as SessionInfoEntry,
    ThinkingLevelChangeEntry as ThinkingLevelChangeEntry,
    UnknownEntry as UnknownEntry,
    UsageEntry as UsageEntry,
)
from .export import export_session as export_session, render_session as render_session
from .harness import (
    AbortResult as AbortResult,
    AgentHarness as AgentHarness,
    HarnessListener as HarnessListener,
    HarnessPhase as HarnessPhase,
    NavigateTreeResult as NavigateTreeResult,
    SystemPromptContext as SystemPromptContext,
    SystemPromptSource as SystemPromptSource,
)
from .harness_events import (
    AbortEvent as AbortEvent,
    AfterProviderResponseEvent as AfterProviderResponseEvent,
    BudgetUpdateEvent as BudgetUpdateEvent,
    CompactionEndEvent as CompactionEndEvent,
    CompactionReason as CompactionReason,
    CompactionStartEvent as CompactionStartEvent,
    HarnessEvent as HarnessEvent,
    HarnessOwnEvent as HarnessOwnEvent,
    ModelUpdateEvent as ModelUpdateEvent,
    QueueUpdateEvent as QueueUpdateEvent,
    ResourcesUpdateEvent as ResourcesUpdateEvent,
    SavePointEvent as SavePointEvent,
    SessionCompactEvent as SessionCompactEvent,
    SessionTreeEvent as SessionTreeEvent,
    SessionWriteErrorEvent as SessionWriteErrorEvent,
    SettledEvent as SettledEvent,
    ThinkingLevelUpdateEvent as ThinkingLevelUpdateEvent,
    ToolsUpdateEvent as ToolsUpdateEvent,
)
from .hooks import (
    AgentHarnessError as AgentHarnessError,
    AgentHarnessErrorCode as AgentHarnessErrorCode,
    BeforeAgentStartEvent as BeforeAgentStartEvent,
    BeforeAgentStartResult as BeforeAgentStartResult,
    BeforeProviderPayloadEvent as BeforeProviderPayloadEvent,
    BeforeProviderPayloadResult as BeforeProviderPayloadResult,
    BeforeProviderRequestEvent as BeforeProviderRequestEvent,
    BeforeProviderRequestResult as BeforeProviderRequestResult,
    BranchSummaryOverride as BranchSummaryOverride,
    ContextEvent as ContextEvent,
    ContextResult as ContextResult,
    FinishTurnEvent as FinishTurnEvent,
    FinishTurnResult as FinishTurnResult,
    HarnessStreamOptions as HarnessStreamOptions,
    HookType as HookType,
    SessionBeforeCompactEvent as SessionBeforeCompactEvent,
    SessionBeforeCompactResult as SessionBeforeCompactResult,
    SessionBeforeTreeEvent as SessionBeforeTreeEvent,
    SessionBeforeTreeResult as SessionBeforeTreeResult,
    ToolCallEvent as ToolCallEvent,
    ToolCallResult as ToolCallResult,
    ToolResultEvent as ToolResultEvent,
    ToolResultPatch as ToolResultPatch,
    TreePreparation as TreePreparation,
)
from .jsonl import SessionFileError as SessionFileError, SessionFileWarning as SessionFileWarning
from .layout import (
    default_session_dir as default_session_dir,
    session_file_name as session_file_name,
)
from .messages import (
    BashExecutionMessage as BashExecutionMessage,
    BranchSummaryMessage as BranchSummaryMessage,
    CompactionSummaryMessage as CompactionSummaryMessage,
    CustomMessage as CustomMessage,
    HarnessMessage as HarnessMessage,
    bash_execution_to_text as bash_execution_to_text,
    convert_to_llm as convert_to_llm,
)
from .resources import (
    PromptTemplate as PromptTemplate,
    ResourceDiagnostic as ResourceDiagnostic,
    Resources as Resources,
    Skill as Skill,
    format_skills_for_system_prompt as format_skills_for_system_prompt,
    load_prompt_templates as load_prompt_templates,
    load_skills as load_skills,
)
from .session import (
    ModelRef as ModelRef,
    Session as Session,
    SessionContext as SessionContext,
    SessionTreeNode as SessionTreeNode,
    SessionWriteError as SessionWriteError,
    UsageTotals as UsageTotals,
)
from .storage import (
    InMemorySessionStorage as InMemorySessionStorage,
    JsonlSessionStorage as JsonlSessionStorage,
    SessionStorage as SessionStorage,
)
from .tokens import (
    estimate_context_tokens as estimate_context_tokens,
    estimate_tokens as estimate_tokens,
)
