"""URL map. Paths and field names follow Mojodex so its clients keep working."""

from __future__ import annotations

from flask_restful import Api

from backend.routes.execution import (
    UserTaskExecutionResource,
    UserTaskExecutionRunResource,
    UserTaskExecutionStopResource,
    UserTaskExecutionTitleResource,
)
from backend.routes.health import HealthResource
from backend.routes.home_chat import HomeChatResource
from backend.routes.login import LoginResource, LogoutResource, UserResource
from backend.routes.messages import MessageResource, UserMessageResource
from backend.routes.orders import (
    MenuAvailabilityResource,
    MenuResource,
    OrderAuditResource,
    OrderEventResource,
    OrderResource,
)
from backend.routes.produced_text import ProducedTextResource, UserTaskExecutionProducedTextResource
from backend.routes.profile import UserProfileResource
from backend.routes.tasks import TaskAdminResource, UserTaskResource
from backend.routes.text_edit import TextEditActionResource
from backend.routes.tools import TaskToolExecutionResource, UserTaskExecutionReasoningResource
from backend.routes.usage import UsageResource
from backend.routes.voice import VoiceResource
from backend.routes.workflow import (
    RestartUserWorkflowExecutionResource,
    UserWorkflowStepExecutionResource,
    UserWorkflowStepExecutionResultResource,
)


def register_routes(api: Api) -> None:
    api.add_resource(HealthResource, "/health")
    api.add_resource(LoginResource, "/login")
    api.add_resource(LogoutResource, "/logout")
    api.add_resource(UserResource, "/user")
    api.add_resource(TaskAdminResource, "/task")
    api.add_resource(UserTaskResource, "/user_task")
    api.add_resource(UserTaskExecutionResource, "/user_task_execution")
    api.add_resource(UserTaskExecutionRunResource, "/user_task_execution_run")
    api.add_resource(UserTaskExecutionTitleResource, "/user_task_execution_title")
    api.add_resource(UserTaskExecutionStopResource, "/user_task_execution_stop")
    api.add_resource(UserMessageResource, "/user_message")
    api.add_resource(MessageResource, "/message")
    api.add_resource(UserTaskExecutionProducedTextResource, "/user_task_execution_produced_text")
    api.add_resource(ProducedTextResource, "/produced_text")
    api.add_resource(MenuResource, "/menu")
    api.add_resource(MenuAvailabilityResource, "/menu_availability")
    api.add_resource(OrderResource, "/order")
    api.add_resource(OrderEventResource, "/order_event")
    api.add_resource(OrderAuditResource, "/order/audit")
    api.add_resource(TextEditActionResource, "/text_edit_action")
    api.add_resource(UsageResource, "/usage")
    api.add_resource(TaskToolExecutionResource, "/task_tool_execution")
    api.add_resource(UserTaskExecutionReasoningResource, "/user_task_execution/reasoning")
    api.add_resource(UserWorkflowStepExecutionResource, "/user_workflow_step_execution")
    api.add_resource(UserWorkflowStepExecutionResultResource, "/user_workflow_step_execution_result")
    api.add_resource(RestartUserWorkflowExecutionResource, "/restart_user_workflow_execution")
    api.add_resource(UserProfileResource, "/user_profile")
    api.add_resource(HomeChatResource, "/home_chat")
    api.add_resource(VoiceResource, "/voice")
