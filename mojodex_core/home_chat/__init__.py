"""Home chat: the user's free chat session, which routes to tasks and hosts their executions.

* ``service``: open (or return) a user's home chat, the tasks it may route to, leaving a task;
* ``routing``: the routing decision in a reply (``<route_to_task>`` tag or a ``route_to_task``
  function call), pure;
* ``turn``: the turn that answers a home chat message: free chat, routing, or the running task.
"""
