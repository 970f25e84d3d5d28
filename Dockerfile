# One image for Grove's three in-cluster programs: grove-operator, grove-scheduler and grove-initc.
#
#   make image                      # docker build -t grove:<version> . (CONTAINER_ENGINE=podman works too)
#
# The Deployments in deploy/ run `command: [grove-operator]` and `command: [grove-scheduler]`; the default entry
# point is grove-initc, because the operator adds the init container with arguments only (as upstream does), so
# GROVE_INIT_CONTAINER_IMAGE can be this same image. A test checks PROGRAMS and the entry point against the
# console scripts of pyproject.toml.
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
WORKDIR /src
RUN python -m venv /opt/grove
COPY pyproject.toml README.md ./
COPY src ./src
RUN /opt/grove/bin/pip install --no-cache-dir --no-compile . \
    && /opt/grove/bin/python -m compileall -q /opt/grove/lib

FROM ${PYTHON_IMAGE}
ARG PROGRAMS="grove-operator grove-scheduler grove-initc"
ENV PATH=/opt/grove/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
COPY --from=build /opt/grove /opt/grove
RUN groupadd --gid 65532 grove \
    && useradd --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin grove \
    && for program in $PROGRAMS; do "$program" --help >/dev/null || exit 1; done
# Numeric, so kubelet can check runAsNonRoot; the manifests add a read-only root filesystem and an emptyDir /tmp.
USER 65532:65532
ENTRYPOINT ["grove-initc"]
