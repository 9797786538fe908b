# Included right after llama.cpp's project(): skip its `common` library, which llama-cpp-python
# forces on but the Python package never loads (a normal variable wins over the forced cache entry).
set(LLAMA_BUILD_COMMON OFF)
